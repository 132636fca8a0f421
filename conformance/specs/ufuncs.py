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

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    Case,
    Edge,
    KernelSpec,
    case_draw,
    one_kind,
    sweep_values,
)
from pytest_gpucheck.conformance.specs.reductions import PRODUCT_EXACT_BOUND
from pytest_gpucheck.reference_kernels.catalog import FRACTIONAL, Entry


@case_draw
def _saxpy_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    m, n = draw(gst.shapes_2d(sizing))
    y_shape = draw(st.sampled_from([(m, n), (n,), (m, 1)]))
    alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
    x = draw(gst.arrays(dtype, (m, n), gst.finite_floats(dtype, 1e3)))
    y = draw(gst.arrays(dtype, y_shape, gst.finite_floats(dtype, 1e3)))
    return Case({"alpha": alpha, "x": x, "y": y},
                f"x.shape={(m, n)}, y.shape={y_shape}, dtype={dtype}, "
                f"alpha={float(alpha)!r}", (m, n))


def _saxpy_sweep(sizing: Sizing, entry: Entry) -> list[Edge]:
    """Each broadcast shape of ``y`` once, with distinct values: drawn arrays are mostly
    one fill value, under which reading every element of ``y`` from its first (numba-cuda
    0.30.4's ``@vectorize(target='cuda')`` does, see known_defects.py) goes unseen."""
    m, n = 3, 5
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    edges = []
    for y_shape in ((n,), (m, 1), (m, n)):
        y = (np.arange(int(np.prod(y_shape)), dtype=np.float32) + 1).reshape(y_shape)
        edges.append(Edge(f"y of shape {y_shape} broadcast, distinct values", Case(
            {"alpha": np.float32(2.0), "x": x, "y": y},
            f"x.shape={(m, n)}, y.shape={y_shape}, dtype=float32, alpha=2.0", (m, n))))
    return edges


@case_draw
def _dot_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    b, n = draw(gst.shapes_2d(sizing))
    elements = draw(one_kind(dtype, PRODUCT_EXACT_BOUND, 1e3))
    x = draw(gst.arrays(dtype, (b, n), elements))
    y = draw(gst.arrays(dtype, (b, n), elements))
    return Case({"x": x, "y": y}, f"x.shape=y.shape={(b, n)} (loop b, core n), "
                                  f"dtype={dtype}", (b,))


@case_draw
def _laplacian_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    shape = draw(gst.shapes_3d(sizing))
    u = draw(gst.arrays(dtype, shape, gst.finite_floats(dtype, 1e3)))
    return Case({"u": u}, f"u.shape={shape} (loop {shape[0]}, core {shape[1:]}), "
                          f"dtype={dtype}", shape)


# -- the repeat check's large cases (a `target='parallel'` ufunc splits them over threads) ---


def _saxpy_large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
                 rng: np.random.Generator) -> Case:
    m, n = sizing.repeat_shape_2d
    x = rng.uniform(-1e3, 1e3, (m, n)).astype(dtype)
    y = rng.uniform(-1e3, 1e3, (n,)).astype(dtype)
    return Case({"alpha": dtype.type(-1.5), "x": x, "y": y},
                f"x.shape={(m, n)}, y.shape={(n,)}, dtype={dtype}, alpha=-1.5", (m, n))


def _dot_large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
               rng: np.random.Generator) -> Case:
    b, n = sizing.repeat_shape_2d
    x, y = (sweep_values((b, n), dtype, kind, PRODUCT_EXACT_BOUND, rng,
                    integers=kind != FRACTIONAL) for _ in range(2))
    return Case({"x": x, "y": y}, f"x.shape=y.shape={(b, n)} (loop b, core n), "
                                  f"dtype={dtype}, {kind}", (b,))


def _laplacian_large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
                     rng: np.random.Generator) -> Case:
    shape = sizing.repeat_shape_3d
    u = sweep_values(shape, dtype, kind, 1e3, rng)
    return Case({"u": u}, f"u.shape={shape} (loop {shape[0]}, core {shape[1:]}), "
                          f"dtype={dtype}, {kind}", shape)


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("ufunc_saxpy", _saxpy_cases, _saxpy_sweep, _saxpy_large),
        KernelSpec("gufunc_dot", _dot_cases, large=_dot_large),
        KernelSpec("gufunc_laplacian_2d", _laplacian_cases, large=_laplacian_large),
    )
}

__all__ = ["SPECS"]
