"""Specs of the elementwise kernels (``vector_add``, ``saxpy``, ``sigmoid``, ``add_one_2d``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    Case,
    KernelSpec,
    case_draw,
    elements,
    repeat_2d,
    spec_1d,
    spec_shapes,
    sweep_2d,
    sweep_values,
)
from pytest_gpucheck.reference_kernels.catalog import (
    MIXED,
    SPECIALS,
    Entry,
)


@case_draw
def _vector_add_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing))
    bound = 2**30 if dtype == np.int32 else 2**61 if dtype == np.int64 else 1e30
    a = draw(gst.arrays(dtype, n, elements(dtype, bound)))
    b = draw(gst.arrays(dtype, n, elements(dtype, bound)))
    return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}", (n,))


@case_draw
def _saxpy_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing))
    alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
    x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
    y = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
    return Case({"alpha": alpha, "x": x, "y": y},
                f"n={n}, dtype={dtype}, alpha={float(alpha)!r}", (n,))


@case_draw
def _sigmoid_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing))
    # +-120 covers both saturations (exp overflows beyond ~88 in float32).
    x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 120.0)))
    return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))


@case_draw
def _add_one_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    shape = draw(gst.shapes_2d(sizing))
    a = draw(gst.arrays(dtype, shape, elements(dtype, 2**20)))
    return Case({"a": a}, f"shape={shape}, dtype={dtype}", shape)


def _edge_vector_add(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                     rng: np.random.Generator) -> Case:
    a = sweep_values((n,), dtype, kind, 2**20, rng)
    b = sweep_values((n,), dtype, kind if kind != SPECIALS else MIXED, 2**20, rng)
    return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_saxpy(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                rng: np.random.Generator) -> Case:
    alpha = dtype.type(-1.5)
    x, y = (sweep_values((n,), dtype, kind, 1e3, rng) for _ in range(2))
    return Case({"alpha": alpha, "x": x, "y": y}, f"n={n}, dtype={dtype}, alpha=-1.5, {kind}",
                (n,))


def _edge_sigmoid(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    x = sweep_values((n,), dtype, kind, 120.0, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_add_one(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    a = sweep_values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", shape)


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        spec_1d("vector_add", _vector_add_cases, _edge_vector_add),
        spec_1d("saxpy", _saxpy_cases, _edge_saxpy),
        spec_1d("sigmoid", _sigmoid_cases, _edge_sigmoid),
        spec_shapes("add_one_2d", _add_one_cases, sweep_2d, repeat_2d, _edge_add_one),
    )
}
