"""NumPy references of the indexing kernels: global index maps of 1-D, 2-D and
3-D grids, the grid-stride loop, and ``transpose``.

An index-map kernel's only argument is its output, so its reference takes the
output ``shape`` (and ``dtype``) and returns the array each element of which
records the flat index of the thread that must write it.  Any integer dtype
works; int64 is the default because it cannot overflow for any array that fits
in memory.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike


def _flat_indices(shape: tuple[int, ...], ndim: int, dtype: DTypeLike) -> np.ndarray:
    if len(shape) != ndim:
        raise ValueError(f"expected a {ndim}-D shape, got {shape}")
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=dtype).reshape(shape)


def index_map_1d(shape: int | tuple[int], dtype: DTypeLike = np.int64) -> np.ndarray:
    """``out[i] = i``: the thread with global x index ``i`` writes element ``i``.

    >>> index_map_1d(4)
    array([0, 1, 2, 3])
    """
    return _flat_indices((shape,) if isinstance(shape, int) else tuple(shape), 1, dtype)


def index_map_2d(shape: tuple[int, int], dtype: DTypeLike = np.int64) -> np.ndarray:
    """``out[r, c] = r * cols + c``: thread (x, y) writes row y, column x.

    >>> index_map_2d((2, 3))
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    return _flat_indices(tuple(shape), 2, dtype)


def index_map_3d(shape: tuple[int, int, int], dtype: DTypeLike = np.int64) -> np.ndarray:
    """``out[z, y, x] = (z * ny + y) * nx + x``: thread (x, y, z) writes ``out[z, y, x]``.

    >>> index_map_3d((2, 1, 2))
    array([[[0, 1]],
    <BLANKLINE>
           [[2, 3]]])
    """
    return _flat_indices(tuple(shape), 3, dtype)


def index_map_grid_stride(shape: int | tuple[int], dtype: DTypeLike = np.int64) -> np.ndarray:
    """``out[i] = i``, written by a grid-stride loop over fewer threads than elements.

    The expected output is the same as :func:`index_map_1d`; what differs is
    the launch the suite draws (a grid that covers fewer threads than ``out``
    has elements), so a loop that skips the tail leaves poisoned elements.

    >>> index_map_grid_stride(3, dtype=np.int32)
    array([0, 1, 2], dtype=int32)
    """
    return index_map_1d(shape, dtype)


def transpose(a: np.ndarray) -> np.ndarray:
    """``a.T`` of a 2-D (typically non-square) array, as a new C-contiguous array.

    >>> transpose(np.arange(6).reshape(2, 3))
    array([[0, 3],
           [1, 4],
           [2, 5]])
    """
    if a.ndim != 2:
        raise ValueError(f"transpose takes a 2-D array, got shape {a.shape}")
    return np.ascontiguousarray(a.T)
