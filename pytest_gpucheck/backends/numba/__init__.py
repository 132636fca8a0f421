"""Numba on three targets (``@njit``, ``@cuda.jit``, the CUDA simulator): backends and
event timer (``backend.py``), the interop adapter (``adapter.py``) and the simulator's
grid-sync guard (``simulator_guard.py``).  The MPI array operations on Numba's device
arrays and the compile check, shared with cuda-python, are in ``backends/numba_device/``.

No module here may be named ``cuda...``: numba-cuda's import redirector (installed by a
``.pth`` file) treats every module name containing ``numba.cuda`` as part of
``numba.cuda``, so ``pytest_gpucheck.backends.numba.cuda_x`` would recurse until
``RecursionError`` (``tests/backends/test_backends_protocol.py`` keeps the names clear)."""
