"""array-api-strict: the array API standard and nothing more, on the host (``backend.py``)."""
