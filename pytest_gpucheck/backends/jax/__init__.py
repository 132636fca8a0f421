"""JAX on the CPU and on a CUDA device: backends, timer and MPI array operations
(``backend.py``) and the interop adapter with its stream-ordered copy (``adapter.py``)."""
