"""NumPy references of the elementwise kernels: ``vector_add``, ``saxpy``,
``sigmoid`` and ``add_one_2d``.

Every reference returns a new array and never modifies its arguments; the
in-place kernel ``add_one_2d`` returns the updated copy.
"""

from __future__ import annotations

import numpy as np


def vector_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b``; the dtype is NumPy's promotion of ``a`` and ``b`` (integers wrap).

    >>> vector_add(np.array([1, 2], np.int32), np.array([3, 4], np.int32))
    array([4, 6], dtype=int32)
    """
    return np.add(a, b)


def saxpy(alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``alpha * x + y`` in the promoted dtype of ``x`` and ``y``.

    ``alpha`` is converted to that dtype first: the contract passes it as a
    scalar of the kernel's dtype, and a NumPy ``float64`` scalar must not
    silently promote a float32 kernel to float64.  The product and the sum are
    rounded separately (no fused multiply-add); the suites' ULP tolerance
    covers implementations that fuse them.

    >>> saxpy(2.0, np.array([1.0, 2.0], np.float32), np.array([0.5, 0.5], np.float32))
    array([2.5, 4.5], dtype=float32)
    """
    dtype = np.result_type(x, y)
    return np.add(np.multiply(dtype.type(alpha), x, dtype=dtype), y, dtype=dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` in the dtype of ``x`` (float64 for integer input).

    The formula is evaluated in a wider type and rounded once: float64 for
    float32 (and float16) inputs, ``np.longdouble`` for float64 inputs (80-bit
    extended precision on x86; the same as float64 on platforms without it).
    The reference is then within about half an ULP of the exact value, so a
    ULP bound measures the implementation's error, not the reference's.
    ``exp`` overflowing for very negative ``x`` gives the exact limit 0, so the
    overflow warning is silenced.

    >>> sigmoid(np.array([0.0, 100.0, -800.0]))
    array([0.5, 1. , 0. ])
    """
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    work_dtype = np.float64 if out_dtype.itemsize < 8 else np.longdouble
    with np.errstate(over="ignore"):
        exact = 1.0 / (1.0 + np.exp(np.negative(x.astype(work_dtype))))
    return exact.astype(out_dtype)


def add_one_2d(a: np.ndarray) -> np.ndarray:
    """The 2-D array ``a`` after ``a += 1``, as a new array of ``a``'s dtype.

    >>> add_one_2d(np.zeros((2, 3), np.int64))
    array([[1, 1, 1],
           [1, 1, 1]])
    """
    if a.ndim != 2:
        raise ValueError(f"add_one_2d takes a 2-D array, got shape {a.shape}")
    return np.add(a, a.dtype.type(1), dtype=a.dtype)
