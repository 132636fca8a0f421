"""What two backends share of Numba's CUDA target: the MPI array operations on its
device arrays (``ops.py``, kernels in ``kernels.py``) and whether numba-cuda can
compile here (``compile_check.py``).  ``numba-cuda`` / ``numba-cudasim``
(``backends/numba/``) and ``cuda-python`` (``backends/cuda_python/``, which runs these
operations on Numba views of its buffers) both import it, so neither imports the other.

No module here may be named ``cuda...`` (see ``backends/numba/__init__.py``)."""
