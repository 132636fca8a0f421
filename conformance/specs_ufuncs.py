"""Specs of the ufunc kernels (``@vectorize`` / ``@guvectorize`` and their kin).

* ``ufunc_saxpy``: ``x`` is 2-D and ``y`` is drawn in a shape that broadcasts
  against it (``(m, n)``, ``(n,)`` or ``(m, 1)``), so an implementation must
  follow NumPy's broadcasting; the result keeps the inputs' float dtype.
* ``gufunc_dot``: layout ``(n),(n)->()`` over a stack of ``b`` rows.
* ``gufunc_laplacian_2d``: layout ``(m,n)->(m,n)`` over a stack of ``b``
  2-D slices; treating the rows as the core (``(n)->(n)``) misses the
  vertical neighbours.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.specs import FLOATS, PRODUCT_EXACT_BOUND, Case, KernelSpec, _one_kind
from pytest_gpucheck import strategies as gst
from pytest_gpucheck import tolerance as tol
from pytest_gpucheck.strategies import Sizing


def _saxpy_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        m, n = draw(gst.shapes_2d(sizing))
        y_shape = draw(st.sampled_from([(m, n), (n,), (m, 1)]))
        alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
        x = draw(gst.arrays(dtype, (m, n), gst.finite_floats(dtype, 1e3)))
        y = draw(gst.arrays(dtype, y_shape, gst.finite_floats(dtype, 1e3)))
        return Case({"alpha": alpha, "x": x, "y": y},
                    f"x.shape={(m, n)}, y.shape={y_shape}, dtype={dtype}, "
                    f"alpha={float(alpha)!r}", (m, n))

    return draw()


def _saxpy_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    x = case.inputs["x"].astype(np.float64)
    y = case.inputs["y"].astype(np.float64)
    terms = np.abs(float(case.inputs["alpha"]) * x) + np.abs(y)  # broadcast like the ufunc
    return tol.terms_rule(terms, 2, expected.dtype, what="alpha*x + y, broadcast")


def _dot_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS, "int32", "int64"))
        b, n = draw(gst.shapes_2d(sizing))
        elements = draw(_one_kind(dtype, PRODUCT_EXACT_BOUND, 1e3))
        x = draw(gst.arrays(dtype, (b, n), elements))
        y = draw(gst.arrays(dtype, (b, n), elements))
        return Case({"x": x, "y": y}, f"x.shape=y.shape={(b, n)} (loop b, core n), "
                                      f"dtype={dtype}", (b,))

    return draw()


def _dot_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    """Per row: exact on integer-valued products whose row magnitude stays below 2**p,
    else Higham's ``gamma_(n+2) * sum|x*y|`` of that row."""
    dtype = expected.dtype
    if not tol.is_float(dtype):
        return tol.exact("integer dot products are exact (inputs drawn without overflow)")
    terms = case.inputs["x"].astype(np.float64) * case.inputs["y"].astype(np.float64)
    magnitude = np.sum(np.abs(terms), axis=-1)
    p = tol.significand_bits(dtype)
    if bool(np.all(terms == np.round(terms))) and float(np.max(magnitude, initial=0)) <= 2.0**p:
        return tol.exact(f"integer-valued {dtype.name} rows with sum|x*y| <= 2**{p}: exact in "
                         "any order")
    n = int(terms.shape[-1])
    return tol.Tolerance(
        "bound", f"Higham per row: gamma_{n + 2}({dtype.name}) * sum|x*y| of the row",
        bound=tol.gamma(n + 2, dtype) * magnitude + tol.underflow_allowance(2 * n, dtype))


def _laplacian_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        shape = draw(gst.shapes_3d(sizing))
        u = draw(gst.arrays(dtype, shape, gst.finite_floats(dtype, 1e3)))
        return Case({"u": u}, f"u.shape={shape} (loop {shape[0]}, core {shape[1:]}), "
                              f"dtype={dtype}", shape)

    return draw()


def _laplacian_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    u = np.abs(case.inputs["u"].astype(np.float64))
    terms = np.zeros_like(u)
    if u.shape[1] > 2 and u.shape[2] > 2:
        terms[:, 1:-1, 1:-1] = (u[:, :-2, 1:-1] + u[:, 2:, 1:-1] + u[:, 1:-1, :-2]
                                + u[:, 1:-1, 2:] + 4 * u[:, 1:-1, 1:-1])
    return tol.terms_rule(terms, 6, expected.dtype, what="five-point Laplacian per slice")


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("ufunc_saxpy", ("alpha", "x", "y"), _saxpy_cases, _saxpy_rule, launch="2d"),
        KernelSpec("gufunc_dot", ("x", "y"), _dot_cases, _dot_rule),
        KernelSpec("gufunc_laplacian_2d", ("u",), _laplacian_cases, _laplacian_rule,
                   launch="3d"),
    )
}

__all__ = ["SPECS"]
