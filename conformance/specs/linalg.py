"""Specs of the matrix products (``matmul``, ``matmul_tiled``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    Case,
    KernelSpec,
    case_draw,
    one_kind,
    repeat_matmul,
    spec_shapes,
    sweep_matmul,
    sweep_values,
)
from pytest_gpucheck.reference_kernels.catalog import (
    Entry,
)


@case_draw
def _matmul_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    m, k, n = draw(gst.matmul_shapes(sizing))
    elements = draw(one_kind(dtype, 2**5, 1.0))
    a = draw(gst.arrays(dtype, (m, k), elements))
    b = draw(gst.arrays(dtype, (k, n), elements))
    return Case({"a": a, "b": b}, f"({m}, {k}) @ ({k}, {n}), dtype={dtype}", (m, n))


def _edge_matmul(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                 rng: np.random.Generator) -> Case:
    m, k, n = shape
    # General floats: a launch-dependent summation order then shows in the bits.
    a = sweep_values((m, k), dtype, kind, 2**5 if dtype.kind != "f" else 1.0, rng)
    b = sweep_values((k, n), dtype, kind, 2**5 if dtype.kind != "f" else 1.0, rng)
    return Case({"a": a, "b": b}, f"({m}, {k}) @ ({k}, {n}), dtype={dtype}, {kind}", (m, n))


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        spec_shapes("matmul", _matmul_cases, sweep_matmul, repeat_matmul, _edge_matmul),
        spec_shapes("matmul_tiled", _matmul_cases, sweep_matmul, repeat_matmul,
                    _edge_matmul),
    )
}
