"""Derived tolerances: how far a result may be from its reference, and why.

A tolerance here is never a guessed ``rtol=1e-5``.  Each rule follows from
how the result is computed:

* **Exact** where the arithmetic is exact: integers (inputs are drawn so
  nothing overflows), copies and index maps, ``max``, and *reductions of
  integer-valued floats whose partial sums stay below 2**24 (float32) or
  2**53 (float64)*.  Every integer of magnitude up to ``2**(p)`` (``p`` the
  significand precision, 24 or 53) is representable, so when the inputs are
  integers and ``sum |x_i| <= 2**p`` every partial sum in *every* summation
  order is an exactly representable integer: all orders give the same,
  exact, result.  A dropped or doubled element then changes the result and
  cannot hide inside a tolerance.
* **ULP** bounds for elementwise math such as ``sigmoid``: within ``k`` units
  in the last place of the float64 reference rounded to the dtype.  Results
  that fall in the subnormal range may be flushed to zero (GPU math does it),
  so an absolute error up to the smallest normal number is also accepted.
* **Higham bounds** for general floating sums and dot products: recursive
  summation of ``n`` terms in any order has ``|s_hat - s| <= gamma_{n-1} *
  sum |x_i|`` with ``gamma_n = n*u / (1 - n*u)`` and ``u`` the unit roundoff
  (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2
  and §3.1).  The suites add one more ``u`` for the rounding of the reference
  itself, so they use ``gamma_{n+1}``.  A matrix product is a dot product per
  element: ``|C_hat - C| <= gamma_k * (|A| |B|)`` with ``k`` the inner size.
  The standard model assumes no underflow; each rounded operation may also
  lose up to the smallest normal number when its result underflows and is
  flushed to zero (XLA and GPU math do it), so every bound adds
  ``operations * smallest_normal`` (negligible unless the data is tiny).
* **Non-finite references are matched exactly** by every rule: an infinity by the same
  infinity, a NaN by a NaN.  A bound is a distance between finite numbers; where the
  reference is infinite the terms it is built from are too, so the bound was infinite and
  accepted any finite result (a saturating ``saxpy`` that clamps overflow to the largest
  finite value passed ``x: +inf``).  A rule may waive this only with the contract's reason
  (:attr:`Tolerance.nonfinite_free`).

Everything is plain NumPy and works on host arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

RuleKind = Literal["exact", "ulp", "bound"]


def unit_roundoff(dtype: DTypeLike) -> float:
    """``u = eps / 2`` of a floating dtype (2**-24 for float32, 2**-53 for float64)."""
    return float(np.finfo(dtype).eps) / 2.0


def significand_bits(dtype: DTypeLike) -> int:
    """Precision ``p`` including the implicit bit: 24 for float32, 53 for float64."""
    return int(np.finfo(dtype).nmant) + 1


def gamma(n: int, dtype: DTypeLike) -> float:
    """Higham's ``gamma_n = n*u / (1 - n*u)``; infinite once ``n*u >= 1`` (no bound)."""
    nu = max(n, 0) * unit_roundoff(dtype)
    return float("inf") if nu >= 1.0 else nu / (1.0 - nu)


def underflow_allowance(operations: int, dtype: DTypeLike) -> float:
    """``operations * smallest_normal``: what flushing underflowed results to zero may lose."""
    return max(operations, 0) * float(np.finfo(dtype).smallest_normal)


def is_float(dtype: DTypeLike) -> bool:
    return bool(np.issubdtype(np.dtype(dtype), np.floating))


@dataclass(frozen=True)
class Tolerance:
    """A derived rule: ``exact``, within ``ulps`` ULP, or within a per-element ``bound``.

    ``reason`` says in one line why the rule holds; it is printed with every
    failure so a reader can judge the rule as well as the result.
    """

    kind: RuleKind
    reason: str
    ulps: float = 0.0
    #: Absolute error allowed near zero by ``ulp`` rules (flush-to-zero).
    floor: float = 0.0
    #: Per-element absolute bound of ``bound`` rules (broadcasts against the result).
    bound: np.ndarray = field(default_factory=lambda: np.zeros(()))
    #: Empty (every bundled rule): where the reference is inf or NaN the result must be the
    #: same inf or a NaN.  Else the contract's reason why a non-finite reference is not
    #: binding there, and the rule's own bound decides.
    nonfinite_free: str = ""

    def __str__(self) -> str:
        if self.kind == "exact":
            return f"exact ({self.reason})"
        if self.kind == "ulp":
            return f"within {self.ulps:g} ULP ({self.reason})"
        return f"|error| <= bound, max bound {float(np.max(self.bound, initial=0.0)):.3g} " \
               f"({self.reason})"

    def mismatches(self, actual: ArrayLike, expected: ArrayLike) -> np.ndarray:
        """Boolean mask of the elements of ``actual`` that break the rule."""
        got = np.asarray(actual)
        want = np.asarray(expected)
        if self.kind == "exact" or not is_float(want.dtype):
            return ~_same_values(got, want)
        error = abs_error(got, want)
        both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
        if self.kind == "ulp":
            allowed = np.maximum(self.ulps * ulp_of(want), self.floor)
        else:
            allowed = np.broadcast_to(self.bound, want.shape)
        # NaN error (a NaN where a number belongs) compares False, so it is a mismatch.
        bad = ~((error <= allowed) | both_nan)
        if not self.nonfinite_free:
            # An infinite bound (built from infinite terms) accepts any finite number: where
            # the reference is inf or NaN only the same value is right (the module's
            # docstring).
            bad |= ~np.isfinite(want.astype(np.float64)) & ~_same_values(got, want)
        return bad


def _same_values(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise equality where NaN equals NaN (an expected NaN is matched by a NaN).

    Integers are compared as integers: an int64 beyond 2**53 read through float64 would
    equal its neighbour (9007199254740993 becomes 9007199254740992), so an integer result
    off by one there would pass.  An integer against a float is compared as Python numbers,
    which compare an int and a float exactly."""
    if is_float(want.dtype) and is_float(got.dtype):
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        return (g == w) | (np.isnan(g) & np.isnan(w))
    if is_float(want.dtype) or is_float(got.dtype):
        same = np.asarray(got.astype(object) == want.astype(object), dtype=bool)
        return same
    return np.asarray(got == want)


def _is_integer(dtype: DTypeLike) -> bool:
    return np.dtype(dtype).kind in "iub"


def abs_error(actual: ArrayLike, expected: ArrayLike) -> np.ndarray:
    """``|actual - expected|`` elementwise.

    Floats: in float64 (exact for float32 inputs); inf==inf gives 0.  Integers (both
    arrays): exactly, as Python ints in an object array, so nothing rounds (float64 holds
    integers up to 2**53 only: an int64 result off by one above that read as error 0)
    and nothing overflows (the difference of two int64 values needs 65 bits)."""
    got_array = np.asarray(actual)
    want_array = np.asarray(expected)
    if _is_integer(got_array.dtype) and _is_integer(want_array.dtype):
        return np.abs(got_array.astype(object) - want_array.astype(object))
    got = got_array.astype(np.float64)
    want = want_array.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(got - want)
    same_inf = np.isinf(got) & (got == want)
    return np.where(same_inf, 0.0, error)


def ulp_of(values: ArrayLike) -> np.ndarray:
    """The spacing of floating ``values`` at their magnitude, in float64."""
    want = np.asarray(values)
    largest = np.finfo(want.dtype).max
    finite = np.where(np.isfinite(want), np.abs(want), largest).astype(want.dtype)
    # The spacing *above* the largest finite value is inf, which would accept any
    # error there (even inf for -inf); its binade's spacing is the one below it.
    finite = np.where(finite == largest, np.nextafter(largest, want.dtype.type(0)), finite)
    return np.spacing(finite).astype(np.float64)


def ulp_error(actual: ArrayLike, expected: ArrayLike) -> np.ndarray:
    """Error of ``actual`` in units of the last place of ``expected`` (floats only)."""
    want = np.asarray(expected)
    # A huge error over a tiny spacing overflows to inf ULP, which is the right answer;
    # the warning would be listed under the user's test as if their code had raised it.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return abs_error(actual, want) / ulp_of(want)


# -- the rules --------------------------------------------------------------------------


def exact(reason: str) -> Tolerance:
    """Bit-for-bit equality (NaN matches NaN), with the reason it must hold."""
    return Tolerance("exact", reason)


def within_ulps(dtype: DTypeLike, ulps: float, reason: str) -> Tolerance:
    """Elementwise math within ``ulps`` ULP; exact for integer dtypes.

    Results in the subnormal range may be flushed to zero, so an absolute
    error up to the smallest normal number of the dtype is accepted as well.
    """
    if not is_float(dtype):
        return exact("integer arithmetic is exact")
    return Tolerance("ulp", reason, ulps=ulps, floor=float(np.finfo(dtype).smallest_normal))


def sum_rule(terms: ArrayLike, dtype: DTypeLike, *, what: str = "sum") -> Tolerance:
    """Rule for ``sum(terms)`` computed in ``dtype`` in any order.

    ``terms`` are the summands computed exactly (or in float64) on the host,
    e.g. ``x * y`` for a dot product.  Exact for integers, for terms that are
    not all finite (NaN stays NaN: a kernel that drops NaN is wrong), and for
    integer-valued float terms with ``sum |t| <= 2**p``; otherwise the bound
    ``gamma_{n+2} * sum |t|`` (one ``u`` for products formed before summing,
    one for rounding the reference).
    """
    t = np.asarray(terms, dtype=np.float64) if is_float(dtype) else np.asarray(terms)
    if not is_float(dtype):
        return exact(f"integer {what} is exact")
    if not bool(np.all(np.isfinite(t))):
        return exact(
            f"IEEE 754: a NaN term (or +inf with -inf) makes the {what} NaN, and infinities of "
            "one sign make it that infinity, in any order"
        )
    magnitude = float(np.sum(np.abs(t)))
    p = significand_bits(dtype)
    if bool(np.all(t == np.round(t))) and magnitude <= 2.0**p:
        return exact(
            f"integer-valued {np.dtype(dtype).name} {what} with sum|t|={magnitude:g} <= 2**{p}: "
            "every partial sum is exact in any order"
        )
    n = int(t.size)
    bound = gamma(n + 2, dtype) * magnitude + underflow_allowance(2 * n, dtype)
    return Tolerance(
        "bound",
        f"Higham: gamma_{n + 2}({np.dtype(dtype).name}) * sum|t| = {bound:.3g} for n={n}",
        bound=np.asarray(bound),
    )


def terms_rule(abs_terms: ArrayLike, count: int, dtype: DTypeLike, *, what: str) -> Tolerance:
    """Per-element bound for a short expression of ``count`` rounded operations.

    ``abs_terms`` is, per output element, the sum of the magnitudes of the
    terms the expression adds up (for ``alpha*x + y``: ``|alpha*x| + |y|``).
    Any evaluation order, fused multiply-add or not, stays within
    ``gamma_{count+1} * abs_terms`` (one more ``u`` for the reference's own
    rounding).  Exact for integer dtypes.
    """
    if not is_float(dtype):
        return exact(f"integer {what} is exact")
    k = count + 1
    bound = gamma(k, dtype) * np.asarray(abs_terms, dtype=np.float64) + underflow_allowance(
        k, dtype)
    return Tolerance(
        "bound", f"gamma_{k}({np.dtype(dtype).name}) * sum|terms| per element ({what})",
        bound=bound,
    )


def matmul_rule(a: ArrayLike, b: ArrayLike, dtype: DTypeLike) -> Tolerance:
    """Per-element rule for ``a @ b``: exact for integers and small integer-valued
    floats, else ``gamma_{k+2} * (|a| @ |b|)`` with ``k`` the inner size."""
    a64 = np.abs(np.asarray(a, dtype=np.float64))
    b64 = np.abs(np.asarray(b, dtype=np.float64))
    if not is_float(dtype):
        return exact("integer matmul is exact")
    magnitude = a64 @ b64
    p = significand_bits(dtype)
    integer_valued = bool(np.all(a64 == np.round(a64)) and np.all(b64 == np.round(b64)))
    if integer_valued and float(np.max(magnitude, initial=0.0)) <= 2.0**p:
        return exact(
            f"integer-valued {np.dtype(dtype).name} products with row sums <= 2**{p}: "
            "exact in any order"
        )
    k = int(a64.shape[-1]) if a64.ndim else 1
    return Tolerance(
        "bound", f"Higham: gamma_{k + 2}({np.dtype(dtype).name}) * (|A| @ |B|) per element",
        bound=gamma(k + 2, dtype) * magnitude + underflow_allowance(2 * k, dtype),
    )


__all__ = [
    "Tolerance",
    "abs_error",
    "exact",
    "gamma",
    "matmul_rule",
    "significand_bits",
    "sum_rule",
    "terms_rule",
    "ulp_error",
    "ulp_of",
    "underflow_allowance",
    "unit_roundoff",
    "within_ulps",
]
