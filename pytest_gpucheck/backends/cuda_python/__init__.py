"""cuda-python (``cuda.core``): the backend, its ``DeviceArray`` and views, event timer,
device copy and MPI array operations (``backend.py``) and the interop adapter
(``adapter.py``)."""
