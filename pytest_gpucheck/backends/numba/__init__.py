"""Numba on three targets (``@njit``, ``@cuda.jit``, the CUDA simulator): backends,
event timer and MPI array operations (``backend.py``), their ``@cuda.jit`` kernels
(``mpi_kernels.py``), the interop adapter (``adapter.py``) and the simulator's grid-sync
guard (``simulator_guard.py``).

No module here may be named ``cuda...``: numba-cuda's import redirector (installed by a
``.pth`` file) treats every module name containing ``numba.cuda`` as part of
``numba.cuda``, so ``pytest_gpucheck.backends.numba.cuda_x`` would recurse until
``RecursionError`` (``tests/test_backends_protocol.py`` keeps the names clear)."""
