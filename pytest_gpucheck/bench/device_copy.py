"""A device-to-device copy on every backend: the streaming benchmark, the
bandwidth ceiling, and the L2 flush all use it.

Each branch uses the framework's own copy so the figure is what a user of that
framework gets (``cudaMemcpyAsync`` underneath for the CUDA backends).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..backends.base import Backend


def device_copy(backend: Backend, src: Any, dst: Any) -> Any:
    """Copy ``src`` into ``dst`` on ``backend``'s device; return the copy.

    JAX arrays are immutable, so for JAX ``dst`` is ignored and a new array is
    returned; every other backend writes ``dst`` and returns it.
    """
    name = backend.name
    if name in ("numpy", "numba-cpu"):
        np.copyto(dst, src)
        return dst
    if name in ("torch-cpu", "torch-cuda"):
        return dst.copy_(src)
    if name == "cupy":
        import cupy

        cupy.copyto(dst, src)
        return dst
    if name in ("numba-cuda", "numba-cudasim"):
        # A device array source makes this a device-to-device copy.
        dst.copy_to_device(src)
        return dst
    if name in ("jax-cpu", "jax-gpu"):
        import jax.numpy as jnp

        return jnp.array(src, copy=True)
    if name == "cuda-python":
        from cuda.bindings import driver

        stream = backend.stream  # type: ignore[attr-defined]
        (err,) = driver.cuMemcpyDtoDAsync(dst.ptr, src.ptr, src.nbytes, stream.handle)
        if int(err) != 0:
            raise RuntimeError(f"cuMemcpyDtoDAsync failed: {err!r}")
        return dst
    raise ValueError(f"no device copy for backend {name!r}")


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
        if self.backend.name in ("jax-cpu", "jax-gpu"):
            result.block_until_ready()
        self.backend.synchronize()


def default_flush_bytes(backend: Backend) -> int:
    """Bytes to stream for a flush: 256 MiB on a GPU (over twice the L2 of current
    data-centre GPUs), 64 MiB on the CPU (past typical last-level caches)."""
    return (256 if backend.is_gpu else 64) * 2**20
