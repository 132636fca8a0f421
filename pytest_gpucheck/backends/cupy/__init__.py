"""CuPy on a CUDA device: backend and event timer (``backend.py``) and the interop
adapter with its stream hooks (``adapter.py``)."""
