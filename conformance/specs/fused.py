"""Specs of the fused kernels (``fused_saxpy``, ``fused_sigmoid``,
``fused_sum_of_squares``): a fused kernel must meet the unfused kernel's contract,
so each spec is the unfused one's (cases, boundary sweep, tolerance rule) under the
fused kernel's name.  The rules already allow what fusion legitimately changes:
``saxpy``'s bound covers a fused multiply-add, ``sum_of_squares``'s any summation
order.
"""

from __future__ import annotations

import dataclasses

from pytest_gpucheck.conformance.specs import elementwise, reductions
from pytest_gpucheck.conformance.specs.base import KernelSpec

UNFUSED = {**elementwise.SPECS, **reductions.SPECS}

#: Fused kernel -> the unfused kernel whose contract it meets.
UNFUSED_KERNEL = {
    "fused_saxpy": "saxpy",
    "fused_sigmoid": "sigmoid",
    "fused_sum_of_squares": "sum_of_squares",
}

SPECS: dict[str, KernelSpec] = {
    fused: dataclasses.replace(UNFUSED[unfused], name=fused)
    for fused, unfused in UNFUSED_KERNEL.items()
}

__all__ = ["SPECS", "UNFUSED_KERNEL"]
