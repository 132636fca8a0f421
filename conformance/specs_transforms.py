"""Specs of the transformation kernels: gradients (``jax.grad``, torch autograd) against
the analytic gradients of ``reference_kernels.transforms``, and ``vmap`` against the
stacked per-item results."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.specs import ALPHAS, FLOATS, HEAT_OPS, Case, KernelSpec
from pytest_gpucheck import strategies as gst
from pytest_gpucheck import tolerance as tol
from pytest_gpucheck.strategies import Sizing
from reference_kernels.transforms import heat_step_transpose_terms


def _vector_cases(names: tuple[str, ...], bound: float) -> Any:
    def cases(sizing: Sizing) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*FLOATS))
            n = draw(gst.sizes(sizing))
            inputs = {name: draw(gst.arrays(dtype, n, gst.finite_floats(dtype, bound)))
                      for name in names}
            return Case(inputs, f"n={n}, dtype={dtype}", (n,))

        return draw()

    return cases


def _exact(reason: str) -> Any:
    def rule(_case: Case, expected: np.ndarray) -> tol.Tolerance:
        return tol.within_ulps(expected.dtype, 0, reason)

    return rule


#: Correctly rounded ``sigmoid`` (exp, add, divide) is within ~4 ULP; the derivative
#: multiplies it by ``1 - sigmoid`` and the chain rule's cotangent: 8 roundings.
GRAD_SIGMOID_OPS = 8


def _grad_sigmoid_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    dtype = expected.dtype
    x = np.abs(case.inputs["x"].astype(np.float64))
    larger = 1.0 / (1.0 + np.exp(-x))  # max(s, 1 - s)
    g = expected.astype(np.float64)
    bound = tol.gamma(GRAD_SIGMOID_OPS, dtype) * (g + larger) + tol.underflow_allowance(
        GRAD_SIGMOID_OPS, dtype)
    return tol.Tolerance(
        "bound", f"gamma_{GRAD_SIGMOID_OPS}({dtype.name}) * (|s'| + max(s, 1 - s)): s(1 - s) "
                 "with 1 - s formed from a rounded s carries an absolute error of a few u "
                 "times max(s, 1 - s)", bound=bound)


def _heat_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        n = draw(gst.sizes(sizing))
        alpha = dtype.type(draw(st.sampled_from(ALPHAS)))
        u = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        g = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        return Case({"u": u, "alpha": alpha, "g": g},
                    f"n={n}, dtype={dtype}, alpha={float(alpha)}", (n,))

    return draw()


def _grad_heat_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    _, magnitude = heat_step_transpose_terms(case.inputs["g"], float(case.inputs["alpha"]))
    return tol.terms_rule(magnitude, HEAT_OPS, expected.dtype, what="H^T g of the heat step")


def _vmap_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        b, n = draw(gst.shapes_2d(sizing))
        alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
        x = draw(gst.arrays(dtype, (b, n), gst.finite_floats(dtype, 1e3)))
        y = draw(gst.arrays(dtype, (n, b), gst.finite_floats(dtype, 1e3)))
        return Case({"alpha": alpha, "x": x, "y": y},
                    f"batch={b}, n={n}, x.shape={(b, n)}, y.shape={(n, b)}, dtype={dtype}, "
                    f"alpha={float(alpha)!r}", (n, b))

    return draw()


def _vmap_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    x = case.inputs["x"].astype(np.float64).T
    y = case.inputs["y"].astype(np.float64)
    terms = np.abs(float(case.inputs["alpha"]) * x) + np.abs(y)
    return tol.terms_rule(terms, 2, expected.dtype, what="alpha*x + y per batch item")


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("grad_sum_of_squares", ("x",), _vector_cases(("x",), 1e3),
                   _exact("2x: doubling is exact")),
        KernelSpec("grad_weighted_sum", ("x", "w"), _vector_cases(("x", "w"), 1e3),
                   _exact("the gradient is w itself (products by 1 are exact)")),
        # +-120 covers both saturations: exp(-x) overflows in float32 beyond ~88.
        KernelSpec("grad_sigmoid", ("x",), _vector_cases(("x",), 120.0), _grad_sigmoid_rule),
        KernelSpec("grad_heat_step_1d", ("u", "alpha", "g"), _heat_cases, _grad_heat_rule),
        KernelSpec("vmap_saxpy", ("alpha", "x", "y"), _vmap_cases, _vmap_rule, launch="2d"),
    )
}

__all__ = ["GRAD_SIGMOID_OPS", "SPECS"]
