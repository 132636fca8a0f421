"""Specs of the multi-device kernels (``sharded_sum``, ``sharded_heat_step_1d``) and of the
cooperative ``heat_steps_grid_sync``: the inputs and tolerances of their single-device
counterparts, whose results they must reproduce."""

from __future__ import annotations

from conformance.specs import (
    SUM_EXACT_BOUND,
    KernelSpec,
    _heat_cases,
    _heat_step_rule,
    _heat_steps_rule,
    _reduction_cases,
    _reduction_rule,
)

SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("sharded_sum", ("x",), _reduction_cases(("x",), SUM_EXACT_BOUND),
                   _reduction_rule("sum"), output_init="zero"),
        KernelSpec("sharded_heat_step_1d", ("u", "alpha"), _heat_cases(False), _heat_step_rule),
        KernelSpec("heat_steps_grid_sync", ("u", "alpha", "steps"), _heat_cases(True),
                   _heat_steps_rule),
    )
}

__all__ = ["SPECS"]
