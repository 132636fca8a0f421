"""PyTorch on the CPU and on a CUDA device: backends, event timer and MPI array
operations (``backend.py``), the interop adapter with its stream hooks (``adapter.py``)
and the peer copy between two GPUs (``peer_copy.py``)."""
