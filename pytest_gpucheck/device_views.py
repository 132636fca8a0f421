"""Strided and transposed views of device arrays, on every backend.

The suites hand kernels views into larger device buffers: outputs in the
middle of guard bands, inputs that are strided or transposed.  NumPy, Numba
device arrays, CuPy, PyTorch and JAX all slice with ``array[index]`` (JAX
copies, having no views); the cuda-python :class:`DeviceArray` is a bare
buffer, so its views are computed here from byte strides and an offset.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def _is_cuda_python(array: Any) -> bool:
    from .backends.cuda_python_backend import DeviceArray

    return isinstance(array, DeviceArray)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def slice_view(array: Any, index: tuple[slice, ...]) -> Any:
    """``array[index]`` for slices with positive steps, as a view where the backend has views."""
    if not _is_cuda_python(array):
        return array[index]
    strides = array.strides or _c_strides(array.shape, array.dtype.itemsize)
    offset = array.offset
    shape: list[int] = []
    new_strides: list[int] = []
    for axis, extent in enumerate(array.shape):
        part = index[axis] if axis < len(index) else slice(None)
        start, stop, step = part.indices(extent)
        if step <= 0:
            raise ValueError("slice_view takes positive steps only")
        shape.append(len(range(start, stop, step)))
        new_strides.append(strides[axis] * step)
        offset += start * strides[axis]
    contiguous = tuple(new_strides) == _c_strides(tuple(shape), array.dtype.itemsize)
    # replace() keeps the array's class (a read-only variant stays read-only) and
    # the stream its data was written on.
    return dataclasses.replace(array, shape=tuple(shape),
                               strides=None if contiguous else tuple(new_strides), offset=offset)


def transpose_view(array: Any) -> Any:
    """The transpose of a 2-D device array, as a view where the backend has views."""
    if not _is_cuda_python(array):
        return array.T
    strides = array.strides or _c_strides(array.shape, array.dtype.itemsize)
    return dataclasses.replace(array, shape=tuple(reversed(array.shape)),
                               strides=tuple(reversed(strides)))


def layout_of(array: Any) -> str:
    """``shape=(3, 4) strides=(64, 8)`` in bytes, for reproducers (``?`` when unknown)."""
    shape = tuple(int(s) for s in getattr(array, "shape", ()))
    strides = getattr(array, "strides", None)
    if _is_cuda_python(array) and strides is None:
        strides = _c_strides(shape, array.dtype.itemsize)
    elif strides is None and callable(getattr(array, "stride", None)):
        # torch: strides in elements, from a method
        strides = tuple(s * array.element_size() for s in array.stride())
    if strides is None:
        return f"shape={shape} strides=? (no views on this backend)"
    return f"shape={shape} strides={tuple(int(s) for s in strides)}"


__all__ = ["layout_of", "slice_view", "transpose_view"]
