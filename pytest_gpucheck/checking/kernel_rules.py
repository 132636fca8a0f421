"""The tolerance rule of each bundled kernel, by the name its catalog entry gives.

A rule takes a problem's inputs (by argument name, as host arrays and
scalars) and the reference's result, and returns the derived
:class:`~pytest_gpucheck.checking.tolerance.Tolerance` an implementation's result must
meet, with its reason.  The conformance suites, the MPI checks and the
project's direct checks of the bundled implementations all apply these rules,
so a kernel has one tolerance wherever it is checked.

>>> import numpy as np
>>> from pytest_gpucheck.reference_kernels import CATALOG, KERNELS
>>> u = np.array([0.0, 1.0, 4.0, 1.0, 0.0])
>>> rule = rule_for(CATALOG["heat_steps_1d"].tolerance)
>>> rule({"u": u, "alpha": 0.25, "steps": 0}, KERNELS["heat_steps_1d"](u, 0.25, 0)).kind
'exact'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pytest_gpucheck.checking import tolerance as tol

Rule = Callable[[Mapping[str, Any], np.ndarray], tol.Tolerance]

#: sigmoid: exp (<= 1 ULP in the usual libms, ~2 on GPUs), an add and a divide,
#: whose errors add up to about 4 ULP; 4 is the bound the suite enforces.
SIGMOID_ULPS = 4

#: Rounded operations in one heat-step update ``u + a*(l - 2u + r)`` (or a rearrangement).
HEAT_OPS = 6

#: Correctly rounded ``sigmoid`` (exp, add, divide) is within ~4 ULP; the derivative
#: multiplies it by ``1 - sigmoid`` and the chain rule's cotangent: 8 roundings.
GRAD_SIGMOID_OPS = 8


def _exact(reason: str) -> Rule:
    def rule(_inputs: Mapping[str, Any], _expected: np.ndarray) -> tol.Tolerance:
        return tol.exact(reason)

    return rule


def _zero_ulps(reason: str) -> Rule:
    def rule(_inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
        return tol.within_ulps(expected.dtype, 0, reason)

    return rule


def correctly_rounded(_inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """One IEEE operation per element: the same bits everywhere (subnormals may flush)."""
    if expected.dtype.kind != "f":
        return tol.exact("integer arithmetic is exact (inputs drawn without overflow)")
    return tol.within_ulps(expected.dtype, 0, "one IEEE operation is correctly rounded: the "
                                              "same bits everywhere, except that a subnormal "
                                              "result may be flushed to zero")


def saxpy(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """``alpha*x + y``: two roundings (or one fused), per element."""
    x = inputs["x"].astype(np.float64)
    y = inputs["y"].astype(np.float64)
    alpha = float(inputs["alpha"])
    return tol.terms_rule(np.abs(alpha * x) + np.abs(y), 2, expected.dtype,
                          what="alpha*x + y, fused or not")


def sigmoid(_inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """:data:`SIGMOID_ULPS` against a reference rounded once from a wider type."""
    return tol.within_ulps(expected.dtype, SIGMOID_ULPS,
                           "exp, add and divide, each within ~1-2 ULP, against a float64 "
                           "reference rounded once")


def _reduction(name: str, *, skip_nan: bool = False) -> Rule:
    """The rule of a sum-like reduction; ``skip_nan``: of its NaN-ignoring variant
    (``nansum``), whose NaN terms are left out before the rule is derived."""
    def rule(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
        x = inputs["x"]
        if name == "sum":
            terms = x
        elif name == "sum_of_squares":
            terms = x.astype(np.float64) * x.astype(np.float64)
        else:
            other = inputs["y" if name == "dot" else "w"]
            terms = x.astype(np.float64) * other.astype(np.float64)
        if skip_nan and tol.is_float(terms.dtype):
            terms = terms[~np.isnan(terms)]
        return tol.sum_rule(terms, expected.dtype, what=f"nan{name}" if skip_nan else name)

    return rule


def heat_step(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """One heat step: :data:`HEAT_OPS` roundings of the terms of each interior update."""
    u = np.abs(inputs["u"].astype(np.float64))
    alpha = float(inputs["alpha"])
    terms = np.zeros_like(u)
    if u.size > 2:
        terms[1:-1] = u[1:-1] * (1 + 2 * alpha) + alpha * (u[:-2] + u[2:])
    return tol.terms_rule(terms, HEAT_OPS, expected.dtype, what="heat step")


def heat_steps(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """``steps`` heat steps: per step ``gamma_7 * (1 + 4 alpha) * max|u0|`` (stable scheme).

    The MPI check of the distributed heat steps once used ``8 * steps * eps *
    max|u|`` instead.  That figure was not derived: at ``alpha = 1/2`` one step's
    rounding can reach ``gamma_7 * 3 * max|u|``, about ``10.5 eps * max|u|``, more
    than it allowed, so a correct implementation could fail it; the bound here
    is the derived one and now applies to every check of the kernel.
    """
    steps = int(inputs["steps"])
    if steps == 0:
        return tol.exact("zero steps copy u")
    u = inputs["u"]
    alpha = float(inputs["alpha"])
    # With alpha <= 1/2 the update has non-negative weights summing to 1, so
    # max|u| never grows and errors are not amplified: each step adds at most
    # gamma * (1 + 4 alpha) * max|u0| per element.
    # Over the finite values: a NaN or an infinity in u spreads to its neighbours exactly
    # (both sides give NaN or inf there, which match), and a NaN scale would reject every
    # element of a correct result.
    magnitudes = np.abs(u.astype(np.float64))
    scale = float(np.max(magnitudes[np.isfinite(magnitudes)], initial=0.0)) * (1 + 4 * alpha)
    bound = steps * (tol.gamma(HEAT_OPS + 1, expected.dtype) * scale
                     + tol.underflow_allowance(HEAT_OPS + 1, expected.dtype))
    return tol.Tolerance(
        "bound", f"{steps} steps x gamma_{HEAT_OPS + 1} * (1 + 4 alpha) * max|u| "
                 "(stable scheme: errors do not grow)",
        bound=np.asarray(bound))


def laplacian_2d(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """Five-point Laplacian: six roundings of the five terms per interior element."""
    u = np.abs(inputs["u"].astype(np.float64))
    terms = np.zeros_like(u)
    if u.shape[0] > 2 and u.shape[1] > 2:
        terms[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                             + 4 * u[1:-1, 1:-1])
    return tol.terms_rule(terms, 6, expected.dtype, what="five-point Laplacian")


def matmul(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """A dot product per element (:func:`~pytest_gpucheck.checking.tolerance.matmul_rule`)."""
    return tol.matmul_rule(inputs["a"], inputs["b"], expected.dtype)


def ufunc_saxpy(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """:func:`saxpy` with ``x`` and ``y`` broadcast like the ufunc."""
    x = inputs["x"].astype(np.float64)
    y = inputs["y"].astype(np.float64)
    terms = np.abs(float(inputs["alpha"]) * x) + np.abs(y)  # broadcast like the ufunc
    return tol.terms_rule(terms, 2, expected.dtype, what="alpha*x + y, broadcast")


def gufunc_dot(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """Per row: exact on integer-valued products whose row magnitude stays below 2**p,
    else Higham's ``gamma_(n+2) * sum|x*y|`` of that row."""
    dtype = expected.dtype
    if not tol.is_float(dtype):
        return tol.exact("integer dot products are exact (inputs drawn without overflow)")
    terms = inputs["x"].astype(np.float64) * inputs["y"].astype(np.float64)
    magnitude = np.sum(np.abs(terms), axis=-1)
    p = tol.significand_bits(dtype)
    if bool(np.all(terms == np.round(terms))) and float(np.max(magnitude, initial=0)) <= 2.0**p:
        return tol.exact(f"integer-valued {dtype.name} rows with sum|x*y| <= 2**{p}: exact in "
                         "any order")
    n = int(terms.shape[-1])
    return tol.Tolerance(
        "bound", f"Higham per row: gamma_{n + 2}({dtype.name}) * sum|x*y| of the row",
        bound=tol.gamma(n + 2, dtype) * magnitude + tol.underflow_allowance(2 * n, dtype))


def gufunc_laplacian_2d(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """:func:`laplacian_2d` of every 2-D slice of the stack."""
    u = np.abs(inputs["u"].astype(np.float64))
    terms = np.zeros_like(u)
    if u.shape[1] > 2 and u.shape[2] > 2:
        terms[:, 1:-1, 1:-1] = (u[:, :-2, 1:-1] + u[:, 2:, 1:-1] + u[:, 1:-1, :-2]
                                + u[:, 1:-1, 2:] + 4 * u[:, 1:-1, 1:-1])
    return tol.terms_rule(terms, 6, expected.dtype, what="five-point Laplacian per slice")


def grad_sigmoid(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """``s(1 - s)`` with ``1 - s`` formed from a rounded ``s``: :data:`GRAD_SIGMOID_OPS`."""
    dtype = expected.dtype
    x = np.abs(inputs["x"].astype(np.float64))
    larger = 1.0 / (1.0 + np.exp(-x))  # max(s, 1 - s)
    g = expected.astype(np.float64)
    bound = tol.gamma(GRAD_SIGMOID_OPS, dtype) * (g + larger) + tol.underflow_allowance(
        GRAD_SIGMOID_OPS, dtype)
    return tol.Tolerance(
        "bound", f"gamma_{GRAD_SIGMOID_OPS}({dtype.name}) * (|s'| + max(s, 1 - s)): s(1 - s) "
                 "with 1 - s formed from a rounded s carries an absolute error of a few u "
                 "times max(s, 1 - s)", bound=bound)


def grad_heat_step_1d(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """``H^T g``: the heat step's :data:`HEAT_OPS` roundings over the transposed terms."""
    from pytest_gpucheck.reference_kernels.transforms import heat_step_transpose_terms

    _, magnitude = heat_step_transpose_terms(inputs["g"], float(inputs["alpha"]))
    return tol.terms_rule(magnitude, HEAT_OPS, expected.dtype, what="H^T g of the heat step")


def vmap_saxpy(inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """:func:`saxpy` per batch item (``x`` batched on axis 0, ``y`` and the result on 1)."""
    x = inputs["x"].astype(np.float64).T
    y = inputs["y"].astype(np.float64)
    terms = np.abs(float(inputs["alpha"]) * x) + np.abs(y)
    return tol.terms_rule(terms, 2, expected.dtype, what="alpha*x + y per batch item")


#: Rule name (an entry's ``tolerance``) -> the rule.
RULES: dict[str, Rule] = {
    "correctly_rounded": correctly_rounded,
    "saxpy": saxpy,
    "sigmoid": sigmoid,
    "index": _exact("index arithmetic is exact"),
    "copy": _exact("the kernel only moves values"),
    "sum": _reduction("sum"),
    "dot": _reduction("dot"),
    "weighted_sum": _reduction("weighted_sum"),
    "sum_of_squares": _reduction("sum_of_squares"),
    "nansum": _reduction("sum", skip_nan=True),
    "nandot": _reduction("dot", skip_nan=True),
    "nanweighted_sum": _reduction("weighted_sum", skip_nan=True),
    "nansum_of_squares": _reduction("sum_of_squares", skip_nan=True),
    "max": _exact("max involves no rounding"),
    "counts": _exact("counts are integers"),
    # Never applied to values: the samples are checked by statistics.
    "statistical": _exact("the kernel only moves values"),
    "heat_step": heat_step,
    "heat_steps": heat_steps,
    "laplacian_2d": laplacian_2d,
    "matmul": matmul,
    "ufunc_saxpy": ufunc_saxpy,
    "gufunc_dot": gufunc_dot,
    "gufunc_laplacian_2d": gufunc_laplacian_2d,
    "grad_sum_of_squares": _zero_ulps("2x: doubling is exact"),
    "grad_weighted_sum": _zero_ulps("the gradient is w itself (products by 1 are exact)"),
    "grad_sigmoid": grad_sigmoid,
    "grad_heat_step_1d": grad_heat_step_1d,
    "vmap_saxpy": vmap_saxpy,
}


def rule_for(name: str) -> Rule:
    """The rule named ``name``; a one-line error names the known rules."""
    try:
        return RULES[name]
    except KeyError:
        raise KeyError(f"no tolerance rule named {name!r}; known: {', '.join(RULES)}") from None


def tolerance_of(kernel: str, inputs: Mapping[str, Any], expected: np.ndarray) -> tol.Tolerance:
    """The tolerance ``kernel``'s catalog entry names, for these inputs and result."""
    from pytest_gpucheck.reference_kernels import entry_for

    return rule_for(entry_for(kernel).tolerance)(inputs, expected)


__all__ = ["GRAD_SIGMOID_OPS", "HEAT_OPS", "RULES", "SIGMOID_ULPS", "Rule", "rule_for",
           "tolerance_of"]
