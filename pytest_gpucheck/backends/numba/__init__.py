"""Numba on three targets (``@njit``, ``@cuda.jit``, the CUDA simulator): backends,
event timer and MPI array operations (``backend.py``), their ``@cuda.jit`` kernels
(``mpi_kernels.py``) and the interop adapter (``adapter.py``)."""
