"""NumPy references of the linear-algebra kernels: ``matmul`` and ``matmul_tiled``."""

from __future__ import annotations

import numpy as np


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of 2-D arrays, in the promoted dtype of ``a`` and ``b``.

    Floats accumulate in float64 and are rounded once (float32 products are
    exact in float64), so the reference's own error is negligible next to a
    float32 implementation's and a ``gamma_k * (|a| @ |b|)`` bound applies to
    the implementation alone.  Integers multiply and accumulate in their
    dtype, wrapping on overflow.

    >>> matmul(np.array([[1, 2]], np.int32), np.array([[3], [4]], np.int32))
    array([[11]], dtype=int32)
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs (m, k) @ (k, n), got {a.shape} @ {b.shape}")
    dtype = np.result_type(a, b)
    if np.issubdtype(dtype, np.floating):
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    return np.matmul(a.astype(dtype, copy=False), b.astype(dtype, copy=False))


def matmul_tiled(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``: the same result as :func:`matmul`, for the shared-memory tiled kernels.

    >>> matmul_tiled(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[1., 2.],
           [3., 4.]])
    """
    return matmul(a, b)
