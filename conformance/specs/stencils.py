"""Specs of the stencils (the heat steps, ``laplacian_2d``) and the periodic halo exchanges."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    LAYOUTS_1D,
    SWEEP_SEED,
    Case,
    CaseDraw,
    Edge,
    KernelSpec,
    LargeBuild,
    SweepBuild,
    case_draw,
    repeat_2d,
    spec_1d,
    spec_shapes,
    sweep_2d,
    sweep_values,
)
from pytest_gpucheck.reference_kernels.catalog import (
    Entry,
)

ALPHAS = (0.1, 0.25, 0.4, 0.5)


STEPS = (0, 1, 2, 5)


@case_draw
def heat_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    """``u`` and ``alpha``, and ``steps`` or ``g`` where the entry takes them."""
    n = draw(gst.sizes(sizing))
    alpha = dtype.type(draw(st.sampled_from(ALPHAS)))
    u = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
    inputs: dict[str, Any] = {"u": u, "alpha": alpha}
    text = f"n={n}, dtype={dtype}, alpha={float(alpha)}"
    if "steps" in entry.arguments:
        inputs["steps"] = draw(st.sampled_from(STEPS))
        text += f", steps={inputs['steps']}"
    if "g" in entry.arguments:  # the cotangent of the heat step's gradient
        inputs["g"] = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
    return Case(inputs, text, (n,))


@case_draw
def _laplacian_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    shape = draw(gst.shapes_2d(sizing))
    u = draw(gst.arrays(dtype, shape, gst.finite_floats(dtype, 1e3)))
    return Case({"u": u}, f"shape={shape}, dtype={dtype}", shape)


HALO_WIDTHS = (0, 1, 2, 3)


def _halo_cases(ndim: int) -> CaseDraw:
    @case_draw
    def cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
        width = draw(st.sampled_from(HALO_WIDTHS if ndim == 1 else HALO_WIDTHS[:3]))
        # Interiors from the bucket (at least the width, so both sources exist).
        if ndim == 1:
            inner: tuple[int, ...] = (draw(gst.sizes(sizing, min_size=max(width, 1))),)
        else:
            inner = draw(gst.shapes_2d(sizing, min_side=max(width, 1)))
        shape = tuple(n + 2 * width for n in inner)
        # Distinct interior values and ghost cells holding 0 (never an interior
        # value): a ghost filled from the wrong cell, or not at all, is visible.
        a = draw(gst.distinct_values(dtype, shape))
        if width:
            for axis in range(ndim):
                ghost = [slice(None)] * ndim
                ghost[axis] = slice(0, width)
                a[tuple(ghost)] = 0
                ghost[axis] = slice(-width, None)
                a[tuple(ghost)] = 0
        return Case({"a": a, "width": width}, f"shape={shape}, width={width}, dtype={dtype}",
                    shape)

    return cases


def _edge_heat(entry: Entry, n: int, dtype: np.dtype, kind: str,
               rng: np.random.Generator) -> Case:
    alpha = dtype.type(ALPHAS[n % len(ALPHAS)])
    inputs: dict[str, Any] = {"u": sweep_values((n,), dtype, kind, 1e3, rng), "alpha": alpha}
    text = f"n={n}, dtype={dtype}, alpha={float(alpha)}, {kind}"
    if "steps" in entry.arguments:
        inputs["steps"] = (1, 2, 3)[n % 3]
        text += f", steps={inputs['steps']}"
    return Case(inputs, text, (n,))


def _edge_laplacian(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    u = sweep_values(shape, dtype, kind, 1e3, rng)
    return Case({"u": u}, f"shape={shape}, dtype={dtype}, {kind}", shape)


def _halo_array(inner: tuple[int, ...], width: int, dtype: np.dtype,
                rng: np.random.Generator) -> Case:
    shape = tuple(n + 2 * width for n in inner)
    size = int(np.prod(shape))
    a = (rng.permutation(size) + 1).astype(dtype).reshape(shape)
    for axis in range(len(shape)):
        if width:
            ghost = [slice(None)] * len(shape)
            ghost[axis] = slice(0, width)
            a[tuple(ghost)] = 0
            ghost[axis] = slice(-width, None)
            a[tuple(ghost)] = 0
    return Case({"a": a, "width": width}, f"shape={shape}, width={width}, dtype={dtype}", shape)


def _sweep_halo(ndim: int) -> SweepBuild:
    """Ghost widths 1 to 3 (and 0), each with the smallest interior (as wide as the
    ghosts), one more, and one past the sweep block; 2-D interiors non-square."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        rng = np.random.default_rng(SWEEP_SEED)
        found = []
        index = 0
        for width in (1, 2, 3, 0):
            for extra in ((0, 1, sizing.sweep_block + 1) if width else (1,)):
                n = max(width, 1) + extra
                inner: tuple[int, ...] = (n,) if ndim == 1 else (n, n + width + 1)
                dtype = np.dtype(entry.dtypes[index % len(entry.dtypes)])
                layout = LAYOUTS_1D[index % 2] if ndim == 1 else gst.CONTIGUOUS
                found.append(Edge(f"width={width}, interior={inner}",
                                  _halo_array(inner, width, dtype, rng), layout))
                index += 1
        return found

    return edges


def _large_halo(ndim: int) -> LargeBuild:
    """A halo exchange of ghost width 1 around the repeat size's interior."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        inner = (sizing.repeat_size,) if ndim == 1 else sizing.repeat_shape_2d
        return _halo_array(inner, 1, dtype, rng)

    return large


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        spec_1d("heat_step_1d", heat_cases, _edge_heat),
        spec_1d("heat_steps_1d", heat_cases, _edge_heat),
        spec_shapes("laplacian_2d", _laplacian_cases, sweep_2d, repeat_2d, _edge_laplacian),
        KernelSpec("halo_exchange_1d", _halo_cases(1), _sweep_halo(1), _large_halo(1)),
        KernelSpec("halo_exchange_2d", _halo_cases(2), _sweep_halo(2), _large_halo(2)),
    )
}
