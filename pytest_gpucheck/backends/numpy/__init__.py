"""NumPy: the host reference backend (``backend.py``) and its interop adapter (``adapter.py``)."""
