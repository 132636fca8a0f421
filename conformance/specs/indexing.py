"""Specs of the indexing kernels (the index maps and ``transpose``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    Case,
    KernelSpec,
    case_draw,
    repeat_2d,
    repeat_3d,
    spec_1d,
    spec_shapes,
    sweep_2d,
    sweep_3d,
    sweep_values,
)
from pytest_gpucheck.reference_kernels.catalog import (
    MIXED,
    Entry,
)


@case_draw
def _index_map_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    """Output shapes of the entry's launch domain (the index map's only argument is ``out``)."""
    if entry.launch == "2d":
        shape: tuple[int, ...] = draw(gst.shapes_2d(sizing))
    elif entry.launch == "3d":
        shape = draw(gst.shapes_3d(sizing))
    else:
        shape = (draw(gst.sizes(sizing)),)
    return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))


@case_draw
def _transpose_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    shape = draw(gst.shapes_2d(sizing))
    a = draw(gst.distinct_values(dtype, shape))
    return Case({"a": a}, f"shape={shape}, dtype={dtype}", (shape[1], shape[0]))


def _edge_index_map(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))


def _edge_index_map_1d(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                       rng: np.random.Generator) -> Case:
    return _edge_index_map(_entry, (n,), dtype, kind, rng)


def _edge_transpose(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    size = int(np.prod(shape))
    a = (rng.permutation(size) + 1).astype(dtype).reshape(shape)
    if kind != MIXED:
        a = sweep_values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", (shape[1], shape[0]))


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        spec_1d("index_map_1d", _index_map_cases, _edge_index_map_1d),
        spec_shapes("index_map_2d", _index_map_cases, sweep_2d, repeat_2d, _edge_index_map),
        spec_shapes("index_map_3d", _index_map_cases, sweep_3d, repeat_3d, _edge_index_map),
        spec_1d("index_map_grid_stride", _index_map_cases, _edge_index_map_1d),
        spec_shapes("transpose", _transpose_cases, sweep_2d, repeat_2d, _edge_transpose),
    )
}
