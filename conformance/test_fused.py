"""Conformance of fused kernels: ``cupy.fuse`` (and a user's own fused kernels) against
the unfused kernels' contracts, as a row of its own in the matrix.

A fusion API compiles several array operations into one kernel; the result must
be what the unfused operations give, within the same derived tolerance.  Each
test runs every registered implementation of its kernel (the ``impl`` fixture:
``backend:name``); the checks every launch gets are listed in
:mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("fused_saxpy")
def test_fused_saxpy(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``alpha * x + y`` in one kernel, within ``gamma_3 * (|alpha x| + |y|)`` (a fused
    multiply-add included); ``alpha`` comes as a scalar of the inputs' dtype."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("fused_sigmoid")
def test_fused_sigmoid(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``1 / (1 + exp(-x))`` in one kernel, within ``sigmoid``'s ULP bound; NaN and
    infinities as ``sigmoid``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("fused_sum_of_squares")
def test_fused_sum_of_squares(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``[sum(x * x)]`` as one map-reduce kernel: exact on small integer-valued data,
    else Higham's bound over ``x * x``."""
    check_implementation(impl, request)
