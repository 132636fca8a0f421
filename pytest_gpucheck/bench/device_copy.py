"""A device-to-device copy on every backend: the streaming benchmark, the
bandwidth ceiling, and the L2 flush all use it.

Each backend copies with its framework's own copy (``Backend.copy``, in
``backends/<framework>/backend.py``) so the figure is what a user of that
framework gets: a stream-ordered ``cudaMemcpyAsync``/``cuMemcpyDtoDAsync``
underneath CuPy, PyTorch and cuda-python, but numba-cuda's
``DeviceNDArray.copy_to_device`` without a stream issues the non-async
``cuMemcpyDtoD`` (numba-cuda 0.30's ``driver.device_to_device``), whose copies
ran at about 1.2 TB/s on an H100 and 1.1 TB/s on an H200 where the others ran
at 2.8-3.9 TB/s.  The copy ceiling is the best copy of any framework, so that
slower path does not lower it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend


def device_copy(backend: Backend, src: Any, dst: Any) -> Any:
    """Copy ``src`` into ``dst`` on ``backend``'s device; return the copy.

    JAX arrays are immutable, so for JAX ``dst`` is ignored and a new array is
    returned; every other backend writes ``dst`` and returns it.  The copy is the
    backend's :meth:`~pytest_gpucheck.backends.base.Backend.copy`.
    """
    return backend.copy(src, dst)


class L2Flusher:
    """Evicts the caches between rounds by copying a buffer larger than them.

    Memory-bound kernels look faster than they are when their input is still
    in L2 from the previous round; copying ``nbytes`` through the cache (twice
    the size of the largest current L2) before each round leaves nothing useful
    in it.  The flush runs before the round's clock starts.
    """

    def __init__(self, backend: Backend, nbytes: int) -> None:
        self.backend = backend
        self.nbytes = int(nbytes)
        count = max(self.nbytes // 4, 1)
        self._src = backend.to_device(np.ones(count, dtype=np.float32))
        self._dst = backend.empty((count,), np.float32)

    def flush(self) -> None:
        """Stream the flush buffer through the cache and wait for it."""
        result = device_copy(self.backend, self._src, self._dst)
        self.backend.wait_for(result)
        self.backend.synchronize()


def default_flush_bytes(backend: Backend) -> int:
    """Bytes to stream for a flush: 256 MiB on a GPU (over twice the L2 of current
    data-centre GPUs), 64 MiB on the CPU (past typical last-level caches)."""
    return (256 if backend.is_gpu else 64) * 2**20
