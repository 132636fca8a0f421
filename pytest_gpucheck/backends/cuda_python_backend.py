"""The documented import path of cuda-python's :class:`DeviceArray` (kept for users).

cuda-python's backend lives in :mod:`pytest_gpucheck.backends.cuda_python.backend`;
implementations written against ``pytest_gpucheck.backends.cuda_python_backend``
keep working.
"""

from __future__ import annotations

from .cuda_python.backend import (
    CudaPythonBackend,
    DeviceArray,
    _cuda_core,
    copy_to_device,
    copy_to_host,
    stream_handle,
)

__all__ = [
    "CudaPythonBackend",
    "DeviceArray",
    "_cuda_core",
    "copy_to_device",
    "copy_to_host",
    "stream_handle",
]
