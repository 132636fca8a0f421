"""NumPy references of the reduction kernels: ``sum``, ``dot``, ``max``,
``weighted_sum``, ``sum_of_squares``, ``histogram`` and ``monte_carlo_pi``.

Accumulation rule (what an implementation is compared with):

* The result is a shape ``(1,)`` array, because the kernels write ``out[0]``.
* Its dtype is NumPy's promotion of the inputs.
* **Integers accumulate in that dtype**, wrapping on overflow exactly as a
  GPU's integer atomics do, so integer results compare exactly.
* **Floats accumulate in float64** (NumPy's pairwise summation, float32
  products formed exactly in float64) and are rounded to the result dtype
  once.  The reference is thus much more accurate than any float32
  implementation, and a derived bound of the ``gamma_n * sum|x|`` kind
  measures the implementation's error alone.  On integer-valued float inputs
  below 2**24 every order of summation is exact, so a dropped or doubled
  element cannot hide behind a tolerance.

``monte_carlo_pi`` is statistical; see :func:`monte_carlo_pi`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import DTypeLike


def _total(terms: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Sum ``terms`` by the accumulation rule and wrap it as a ``(1,)`` array of ``dtype``."""
    if np.issubdtype(dtype, np.floating):
        return np.array([np.sum(terms, dtype=np.float64)]).astype(dtype)
    return np.array([np.sum(terms, dtype=dtype)], dtype=dtype)


def _products(x: np.ndarray, y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x * y`` elementwise: in float64 for floats (exact for float32), in ``dtype`` else."""
    if x.shape != y.shape:
        raise ValueError(f"operands need the same shape, got {x.shape} and {y.shape}")
    work = np.dtype(np.float64) if np.issubdtype(dtype, np.floating) else dtype
    return np.multiply(x.astype(work, copy=False), y.astype(work, copy=False), dtype=work)


def sum(x: np.ndarray) -> np.ndarray:
    """``[sum(x)]``; 0 for an empty ``x``.

    >>> sum(np.array([1.5, 2.5, 3.0], np.float32))
    array([7.], dtype=float32)
    >>> sum(np.array([2**31 - 1, 1], np.int32))  # wraps like an int32 atomic
    array([-2147483648], dtype=int32)
    """
    return _total(x, x.dtype)


def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``[sum(x * y)]`` in the promoted dtype of ``x`` and ``y``.

    >>> dot(np.array([1, 2, 3]), np.array([4, 5, 6]))
    array([32])
    """
    dtype = np.result_type(x, y)
    return _total(_products(x, y, dtype), dtype)


def max(x: np.ndarray) -> np.ndarray:
    """``[max(x)]`` of a non-empty ``x``, in ``x``'s dtype (exact: no rounding).

    >>> max(np.array([3, -7, 5], np.int64))
    array([5])
    """
    if x.size == 0:
        raise ValueError("max is defined for a non-empty x only")
    return np.array([np.max(x)], dtype=x.dtype)


def weighted_sum(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[sum(w * x)]`` in the promoted dtype of ``x`` and ``w``.

    >>> weighted_sum(np.array([1.0, 2.0]), np.array([0.5, 0.25]))
    array([1.])
    """
    dtype = np.result_type(x, w)
    return _total(_products(w, x, dtype), dtype)


def sum_of_squares(x: np.ndarray) -> np.ndarray:
    """``[sum(x * x)]`` in ``x``'s dtype.

    >>> sum_of_squares(np.array([1, 2, 3], np.int32))
    array([14], dtype=int32)
    """
    return _total(_products(x, x, x.dtype), x.dtype)


def _nan_total(terms: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """:func:`_total` by ``np.nansum``: NaN terms left out (integers have none)."""
    if np.issubdtype(dtype, np.floating):
        return np.array([np.nansum(terms, dtype=np.float64)]).astype(dtype)
    return np.array([np.sum(terms, dtype=dtype)], dtype=dtype)


def nansum(x: np.ndarray) -> np.ndarray:
    """``[np.nansum(x)]``: :func:`sum` with NaN elements left out; 0 when all are NaN.

    >>> nansum(np.array([1.5, np.nan, 3.0], np.float32))
    array([4.5], dtype=float32)
    """
    return _nan_total(x, x.dtype)


def nandot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``[np.nansum(x * y)]``: :func:`dot` with the NaN products left out.

    >>> nandot(np.array([1.0, np.nan, 2.0]), np.array([4.0, 5.0, 6.0]))
    array([16.])
    """
    dtype = np.result_type(x, y)
    return _nan_total(_products(x, y, dtype), dtype)


def nanweighted_sum(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[np.nansum(w * x)]``: :func:`weighted_sum` with the NaN products left out.

    >>> nanweighted_sum(np.array([1.0, np.nan]), np.array([0.5, 0.25]))
    array([0.5])
    """
    dtype = np.result_type(x, w)
    return _nan_total(_products(w, x, dtype), dtype)


def nansum_of_squares(x: np.ndarray) -> np.ndarray:
    """``[np.nansum(x * x)]``: :func:`sum_of_squares` with NaN elements left out.

    >>> nansum_of_squares(np.array([1.0, np.nan, 3.0]))
    array([10.])
    """
    return _nan_total(_products(x, x, x.dtype), x.dtype)


def nanmax(x: np.ndarray) -> np.ndarray:
    """``[np.nanmax(x)]`` of a non-empty ``x``: :func:`max` with NaN elements left out; NaN
    when every element is NaN (as ``np.nanmax``, without its warning).

    >>> nanmax(np.array([3.0, np.nan, 5.0], np.float32))
    array([5.], dtype=float32)
    """
    if x.size == 0:
        raise ValueError("nanmax is defined for a non-empty x only")
    if x.dtype.kind == "f" and bool(np.all(np.isnan(x))):
        return np.array([np.nan], dtype=x.dtype)
    return np.array([np.nanmax(x)], dtype=x.dtype)


def histogram(x: np.ndarray, nbins: int, dtype: DTypeLike | None = None) -> np.ndarray:
    """Counts: ``out[v]`` is how many elements of ``x`` equal ``v``, for ``v`` in ``[0, nbins)``.

    Values outside ``[0, nbins)`` are not counted, as ``np.histogram`` leaves out
    values outside its range: a kernel that clamps them into the edge bins, or
    wraps a negative value around, is wrong, and the suites draw such values.
    The counts have ``x``'s dtype unless ``dtype`` is given: the same width as
    the data, which every framework's integer atomics support.

    >>> histogram(np.array([0, 2, 2, 3], np.int32), 5)
    array([1, 0, 2, 1, 0], dtype=int32)
    >>> histogram(np.array([-1, 0, 5, 4], np.int32), 5)  # -1 and 5 are not counted
    array([1, 0, 0, 0, 1], dtype=int32)
    """
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"histogram needs integer values, got dtype {x.dtype}")
    values = x.reshape(-1)
    inside = values[(values >= 0) & (values < nbins)]
    counts = np.bincount(inside.astype(np.intp), minlength=nbins)
    return counts.astype(x.dtype if dtype is None else dtype)


def monte_carlo_pi(samples: np.ndarray) -> float:
    """Estimate pi from an ``(n, 2)`` array of points drawn uniformly in ``[0, 1)^2``.

    Statistical contract of the ``monte_carlo_pi`` kernel: its output row
    ``out[i] = (u, v)`` is sample ``i``, uniform in ``[0, 1)^2`` and independent
    of the others.  A point falls inside the quarter disc ``u^2 + v^2 < 1`` with
    probability ``pi / 4``, so this estimate ``4 * (inside / n)`` has mean pi
    and standard deviation :func:`monte_carlo_pi_standard_error` ``(n)``
    ``= 4 * sqrt(p (1 - p) / n)`` with ``p = pi / 4`` (about ``1.64 / sqrt(n)``).
    A suite accepts an estimate within ``z`` standard errors of pi, where ``z``
    is the two-sided normal quantile of the false-alarm rate it states
    (``z = 5`` fails a correct kernel about once in 1.7 million runs).  That
    the samples lie in ``[0, 1)`` and that threads do not share one random
    stream are checked separately; this function only estimates.

    >>> monte_carlo_pi(np.array([[0.1, 0.2], [0.9, 0.9], [0.5, 0.5], [0.0, 0.3]]))
    3.0
    """
    if samples.ndim != 2 or samples.shape[1] != 2:
        raise ValueError(f"samples must have shape (n, 2), got {samples.shape}")
    if samples.shape[0] == 0:
        raise ValueError("monte_carlo_pi needs at least one sample")
    u = samples[:, 0].astype(np.float64)
    v = samples[:, 1].astype(np.float64)
    inside = np.count_nonzero(u * u + v * v < 1.0)
    return 4.0 * float(inside) / samples.shape[0]


def monte_carlo_pi_standard_error(n: int) -> float:
    """Standard deviation of :func:`monte_carlo_pi` over ``n`` independent uniform samples.

    >>> round(monte_carlo_pi_standard_error(10_000), 4)
    0.0164
    """
    if n < 1:
        raise ValueError(f"need at least one sample, got n={n}")
    p = math.pi / 4
    return 4.0 * math.sqrt(p * (1.0 - p) / n)
