"""Specs of the multi-device kernels (``sharded_sum``, ``sharded_heat_step_1d``) and of the
cooperative ``heat_steps_grid_sync``: the inputs and tolerances of their single-device
counterparts, whose results they must reproduce."""

from __future__ import annotations

from pytest_gpucheck.conformance.specs.base import KernelSpec
from pytest_gpucheck.conformance.specs.reductions import SUM_EXACT_BOUND, reduction_cases
from pytest_gpucheck.conformance.specs.stencils import heat_cases

SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("sharded_sum", reduction_cases(SUM_EXACT_BOUND)),
        KernelSpec("sharded_heat_step_1d", heat_cases),
        KernelSpec("heat_steps_grid_sync", heat_cases),
    )
}

__all__ = ["SPECS"]
