"""cuda-python's device data: :class:`DeviceArray` (a ``cuda.core`` Buffer with shape,
dtype, byte strides and an offset, exposing the CUDA Array Interface) and the copies
between it and the host.

Kept apart from :mod:`.backend` so that the backend and the interop adapter
(:mod:`.adapter`) both import it and neither imports the other at load.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class DeviceArray:
    """A typed, shaped view of a ``cuda.core`` Buffer (what cuda-python kernels take)."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None = None  # bytes; None means C-contiguous
    offset: int = 0  # bytes from the start of the buffer
    #: The ``cuda.core`` Stream the data is written on (None: synchronized, no stream).
    stream: Any = None

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle) + self.offset

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def readonly(self) -> bool:
        """False: kernels write these arrays (a read-only variant overrides it)."""
        return False

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CAI v3 with the producing stream, so a consumer orders its work after ours.

        A size-0 array's data pointer is 0, as the interface asks: the address of an
        empty view at an offset lies outside any allocation, and cuda.core's
        ``StridedMemoryView`` asks the driver which device holds a non-zero pointer
        (``CUDA_ERROR_INVALID_VALUE`` on an H200, 2026-11-27).
        """
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr if self.size else 0, self.readonly),
            "strides": self.strides,
            "version": 3,
            "stream": stream_handle(self.stream),
        }

    # The view protocol of pytest_gpucheck.checking.device_views: a bare buffer has no
    # slicing of its own, so views are computed from byte strides and an offset.
    @property
    def gpucheck_byte_strides(self) -> tuple[int, ...]:
        """Byte strides, C-order ones spelt out where :attr:`strides` is None."""
        return self.strides or byte_c_strides(self.shape, self.dtype.itemsize)

    def gpucheck_slice_view(self, index: tuple[slice, ...]) -> DeviceArray:
        """``self[index]`` for slices with positive steps, as a view of the same buffer."""
        strides = self.gpucheck_byte_strides
        offset = self.offset
        shape: list[int] = []
        new_strides: list[int] = []
        for axis, extent in enumerate(self.shape):
            part = index[axis] if axis < len(index) else slice(None)
            start, stop, step = part.indices(extent)
            if step <= 0:
                raise ValueError("slice_view takes positive steps only")
            shape.append(len(range(start, stop, step)))
            new_strides.append(strides[axis] * step)
            offset += start * strides[axis]
        contiguous = tuple(new_strides) == byte_c_strides(tuple(shape), self.dtype.itemsize)
        # replace() keeps the class (a read-only variant stays read-only) and
        # the stream the data was written on.
        return dataclasses.replace(self, shape=tuple(shape),
                                   strides=None if contiguous else tuple(new_strides),
                                   offset=offset)

    def gpucheck_transpose_view(self) -> DeviceArray:
        """The transpose of a 2-D array, as a view of the same buffer."""
        return dataclasses.replace(self, shape=tuple(reversed(self.shape)),
                                   strides=tuple(reversed(self.gpucheck_byte_strides)))


def byte_c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def stream_handle(stream: Any) -> int | None:
    """The CAI v3 ``stream`` value of a ``cuda.core`` Stream (None for no stream).

    v3 forbids 0: the legacy default stream is spelt 1.
    """
    if stream is None:
        return None
    handle = int(stream.handle)
    return handle if handle else 1


def copy_to_device(stream: Any, address: int, host: np.ndarray) -> None:
    """Copy the contiguous ``host`` to device ``address`` on ``stream``, and wait for it.

    The copy is queued on the stream the kernels run on: cuda.core streams are
    non-blocking (``StreamOptions.nonblocking=True``), so they do not wait for a
    copy on the legacy default stream (plain ``cuMemcpyHtoD``), and a kernel
    could read the buffer before the copy landed.  Waiting afterwards keeps
    ``host`` (pageable, possibly a temporary) alive until the driver is done.
    """
    from cuda.bindings import driver

    (err,) = driver.cuMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes, stream.handle)
    _check(err)
    stream.sync()


def copy_to_host(stream: Any, host: np.ndarray, address: int) -> None:
    """Copy ``host.nbytes`` from device ``address`` into the contiguous ``host``, on ``stream``.

    Queued after the stream's kernels, then waited for, so ``host`` holds their result.
    """
    from cuda.bindings import driver

    (err,) = driver.cuMemcpyDtoHAsync(host.ctypes.data, address, host.nbytes, stream.handle)
    _check(err)
    stream.sync()


def _check(err: Any) -> None:
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver call failed: {err!r}")
