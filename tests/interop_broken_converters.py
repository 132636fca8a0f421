"""Deliberately broken converters: each must be rejected by the interop suite.

Every one claims to hand a NumPy array to NumPy without copying; each breaks
one promise.  ``tests/interop/test_interop_broken.py`` runs them through the
classifier and through the whole suite (pytester), and shows the rejection.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np


def _raw_memory(array: np.ndarray) -> Any:
    """A ctypes view of the bytes ``array`` spans (the consumer's only link to them)."""
    low = sum(min(0, (n - 1) * s) for n, s in zip(array.shape, array.strides, strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(array.shape, array.strides, strict=True))
    span = high - low + array.itemsize if array.size else 0
    return (ctypes.c_char * max(span, 1)).from_address(array.ctypes.data + low), -low


def honest(array: np.ndarray) -> np.ndarray:
    """The control: a real zero-copy hand-over."""
    return np.from_dlpack(array)


def copies(array: np.ndarray) -> np.ndarray:
    """Copies while claiming zero-copy."""
    return np.array(array, copy=True)


def drops_strides(array: np.ndarray) -> np.ndarray:
    """Same memory, but read as C-contiguous: a transposed view comes out scrambled."""
    raw, offset = _raw_memory(array)
    raw.keep_alive = array  # only the strides are wrong here
    out = np.ndarray(array.shape, dtype=array.dtype, buffer=raw, offset=offset)
    out.flags.writeable = array.flags.writeable
    return out


def changes_dtype(array: np.ndarray) -> np.ndarray:
    """Same memory, reinterpreted as the integer dtype of the same size (NumPy dtypes of
    1, 2, 4 or 8 bytes)."""
    kind = "i" if array.dtype.kind == "u" else "u"
    return array.view(np.dtype(f"{kind}{array.itemsize}"))


def loses_readonly(array: np.ndarray) -> np.ndarray:
    """Same memory and layout, but writable even when the producer is read-only."""
    raw, offset = _raw_memory(array)
    raw.keep_alive = array
    return np.ndarray(array.shape, dtype=array.dtype, buffer=raw, offset=offset,
                      strides=array.strides)


def frees_producer(array: np.ndarray) -> np.ndarray:
    """Same memory and layout, but nothing keeps the producer's memory allocated."""
    raw, offset = _raw_memory(array)
    out = np.ndarray(array.shape, dtype=array.dtype, buffer=raw, offset=offset,
                     strides=array.strides)
    out.flags.writeable = array.flags.writeable
    return out


BROKEN = {
    "copies": copies,
    "drops_strides": drops_strides,
    "changes_dtype": changes_dtype,
    "loses_readonly": loses_readonly,
    "frees_producer": frees_producer,
}
