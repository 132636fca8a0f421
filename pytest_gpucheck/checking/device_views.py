"""Strided and transposed views of device arrays, on every backend.

The suites hand kernels views into larger device buffers: outputs in the
middle of guard bands, inputs that are strided or transposed.  NumPy, Numba
device arrays, CuPy, PyTorch and JAX all slice with ``array[index]`` (JAX
copies, having no views).  An array type without slicing of its own (the
cuda-python ``DeviceArray``, a bare buffer) computes its views itself through
``gpucheck_slice_view(index)``, ``gpucheck_transpose_view()`` and
``gpucheck_byte_strides``, beside its backend
(``pytest_gpucheck/backends/cuda_python/backend.py``).
"""

from __future__ import annotations

from typing import Any


def _own(array: Any, name: str) -> Any:
    """The view hook ``name`` of an array type that has no slicing of its own, or None."""
    # getattr with a default: Numba's simulated arrays forward unknown names to NumPy.
    return getattr(array, name, None)


def slice_view(array: Any, index: tuple[slice, ...]) -> Any:
    """``array[index]`` for slices with positive steps, as a view where the backend has views."""
    own = _own(array, "gpucheck_slice_view")
    return own(index) if own is not None else array[index]


def transpose_view(array: Any) -> Any:
    """The transpose of a 2-D device array, as a view where the backend has views."""
    own = _own(array, "gpucheck_transpose_view")
    return own() if own is not None else array.T


def layout_of(array: Any) -> str:
    """``shape=(3, 4) strides=(64, 8)`` in bytes, for reproducers (``?`` when unknown)."""
    shape = tuple(int(s) for s in getattr(array, "shape", ()))
    strides = _own(array, "gpucheck_byte_strides")
    if strides is None:
        strides = getattr(array, "strides", None)
    if strides is None and callable(getattr(array, "stride", None)):
        # torch: strides in elements, from a method
        strides = tuple(s * array.element_size() for s in array.stride())
    if strides is None:
        return f"shape={shape} strides=? (no views on this backend)"
    return f"shape={shape} strides={tuple(int(s) for s in strides)}"


__all__ = ["layout_of", "slice_view", "transpose_view"]
