"""CuPy on a CUDA device: backend and event timer (``backend.py``), the interop adapter
with its stream hooks (``adapter.py``) and the peer copy between two GPUs
(``peer_copy.py``)."""
