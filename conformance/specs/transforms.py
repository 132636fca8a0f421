"""Specs of the transformation kernels: gradients (``jax.grad``, torch autograd) against
the analytic gradients of ``pytest_gpucheck.reference_kernels.transforms``, and ``vmap`` against the
stacked per-item results."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.kernel_rules import GRAD_SIGMOID_OPS
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import Case, CaseDraw, KernelSpec, case_draw
from pytest_gpucheck.conformance.specs.stencils import heat_cases
from pytest_gpucheck.reference_kernels.catalog import Entry


def _vector_cases(bound: float) -> CaseDraw:
    @case_draw
    def cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
        n = draw(gst.sizes(sizing))
        inputs = {name: draw(gst.arrays(dtype, n, gst.finite_floats(dtype, bound)))
                  for name in entry.arguments}
        return Case(inputs, f"n={n}, dtype={dtype}", (n,))

    return cases


@case_draw
def _vmap_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    b, n = draw(gst.shapes_2d(sizing))
    alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
    x = draw(gst.arrays(dtype, (b, n), gst.finite_floats(dtype, 1e3)))
    y = draw(gst.arrays(dtype, (n, b), gst.finite_floats(dtype, 1e3)))
    return Case({"alpha": alpha, "x": x, "y": y},
                f"batch={b}, n={n}, x.shape={(b, n)}, y.shape={(n, b)}, dtype={dtype}, "
                f"alpha={float(alpha)!r}", (n, b))


def _vmap_base(sizing: Sizing, entry: Entry, dtype: np.dtype,
               rng: np.random.Generator) -> Case:
    """The derived sweep's base case: a non-square batch, alpha at 1.5."""
    b, n = 3, sizing.sweep_block + 1
    x = rng.integers(-32, 33, (b, n)).astype(dtype)
    y = rng.integers(-32, 33, (n, b)).astype(dtype)
    return Case({"alpha": dtype.type(1.5), "x": x, "y": y},
                f"batch={b}, n={n}, x.shape={(b, n)}, y.shape={(n, b)}, dtype={dtype}, "
                f"alpha=1.5", (n, b))


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("grad_sum_of_squares", _vector_cases(1e3)),
        KernelSpec("grad_weighted_sum", _vector_cases(1e3)),
        # +-120 covers both saturations: exp(-x) overflows in float32 beyond ~88.
        KernelSpec("grad_sigmoid", _vector_cases(120.0)),
        KernelSpec("grad_heat_step_1d", heat_cases),
        KernelSpec("vmap_saxpy", _vmap_cases, base=_vmap_base),
    )
}

__all__ = ["GRAD_SIGMOID_OPS", "SPECS"]
