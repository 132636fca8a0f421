"""Specs of the reductions (``sum``, ``dot``, ``max``, ``weighted_sum``, ``sum_of_squares``,
``histogram``, the statistical ``monte_carlo_pi``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    Case,
    CaseDraw,
    EdgeMaker,
    KernelSpec,
    case_draw,
    elements,
    one_kind,
    spec_1d,
    sweep_values,
)
from pytest_gpucheck.reference_kernels.catalog import (
    FRACTIONAL,
    MIXED,
    OUT_OF_RANGE,
    Entry,
)

#: Integer-valued inputs up to these magnitudes keep every sum below 2**24 for the
#: largest bucket size (1031 elements): exact in float32 in any order.
SUM_EXACT_BOUND = 2**12


PRODUCT_EXACT_BOUND = 2**6


def reduction_cases(exact_bound: int) -> CaseDraw:
    @case_draw
    def cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
        n = draw(gst.sizes(sizing, min_size=entry.min_size))
        elements = draw(one_kind(dtype, exact_bound, 1e3))
        inputs = {name: draw(gst.arrays(dtype, n, elements)) for name in entry.arguments}
        return Case(inputs, f"n={n}, dtype={dtype}", (n,))

    return cases


@case_draw
def _max_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing, min_size=entry.min_size))
    bound = 1e30 if dtype.kind == "f" else np.iinfo(dtype).max
    x = draw(gst.arrays(dtype, n, elements(dtype, bound)))
    return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))


HISTOGRAM_BINS = (1, 2, 7, 32, 33, 100)


@case_draw
def _histogram_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing))
    nbins = draw(st.sampled_from(HISTOGRAM_BINS))
    # Mostly inside [0, nbins), a few values outside, which must not be counted.
    x = draw(gst.arrays(dtype, n, gst.integer_valued(dtype, -2, nbins + 1)))
    return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}", (n,),
                (nbins,))


@case_draw
def _monte_carlo_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(st.sampled_from(sizing.samples))
    seed = draw(st.integers(0, 2**31 - 1))
    return Case({"seed": seed, "n": n, "dtype": dtype}, f"n={n}, seed={seed}, dtype={dtype}",
                (n,))


def _edge_reduction(bound: int) -> EdgeMaker:
    def make(entry: Entry, n: int, dtype: np.dtype, kind: str,
             rng: np.random.Generator) -> Case:
        # ONE_NAN: integer-valued finite values beside the NaN, so nothing but the NaN can
        # make the result NaN (no overflow), and a kernel that drops it gives a finite sum.
        inputs = {name: sweep_values((n,), dtype, MIXED if kind == FRACTIONAL else kind, bound, rng,
                                integers=kind != FRACTIONAL)
                  for name in entry.arguments}
        return Case(dict(inputs), f"n={n}, dtype={dtype}, {kind}", (n,))

    return make


def _edge_max(_entry: Entry, n: int, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
    x = sweep_values((n,), dtype, kind, 2**20, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_histogram(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    # Every size draws from [-2, nbins + 2): a few values fall outside the bins, which
    # the contract leaves uncounted.  OUT_OF_RANGE adds the extremes of the dtype and the
    # first values past each edge, where a clamp or a wrap-around shows.
    nbins = HISTOGRAM_BINS[n % len(HISTOGRAM_BINS)]
    x = rng.integers(-2, nbins + 2, n).astype(dtype)
    if kind == OUT_OF_RANGE:
        info = np.iinfo(dtype)
        outside = np.array([-1, nbins, info.min, info.max], dtype)
        x[: min(n, outside.size)] = outside[: min(n, outside.size)]
    return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}, {kind}", (n,),
                (nbins,))


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        spec_1d("sum", reduction_cases(SUM_EXACT_BOUND), _edge_reduction(SUM_EXACT_BOUND)),
        spec_1d("dot", reduction_cases(PRODUCT_EXACT_BOUND),
                _edge_reduction(PRODUCT_EXACT_BOUND)),
        spec_1d("max", _max_cases, _edge_max),
        spec_1d("weighted_sum", reduction_cases(PRODUCT_EXACT_BOUND),
                _edge_reduction(PRODUCT_EXACT_BOUND)),
        spec_1d("sum_of_squares", reduction_cases(PRODUCT_EXACT_BOUND),
                _edge_reduction(PRODUCT_EXACT_BOUND)),
        spec_1d("histogram", _histogram_cases, _edge_histogram),
        KernelSpec("monte_carlo_pi", _monte_carlo_cases),
    )
}
