"""PyTorch on the CPU and on a CUDA device: backends, event timer and MPI array
operations (``backend.py``) and the interop adapter with its stream hooks (``adapter.py``)."""
