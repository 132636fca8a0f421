"""Conformance of fused kernels: ``cupy.fuse`` (and a user's own fused kernels) against
the unfused kernels' contracts, as a row of its own in the matrix.

A fusion API compiles several array operations into one kernel; the result must
be what the unfused operations give, within the same derived tolerance.  Each
test runs every registered implementation of its kernel (the ``impl`` fixture:
``backend:name``); the checks every launch gets are listed in
:mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_fused_saxpy = kernel_test("fused_saxpy", (
    "``alpha * x + y`` in one kernel, within ``gamma_3 * (|alpha x| + |y|)`` (a fused "
    "multiply-add included); ``alpha`` comes as a scalar of the inputs' dtype."))

test_fused_sigmoid = kernel_test("fused_sigmoid", (
    "``1 / (1 + exp(-x))`` in one kernel, within ``sigmoid``'s ULP bound; NaN and "
    "infinities as ``sigmoid``."))

test_fused_sum_of_squares = kernel_test("fused_sum_of_squares", (
    "``[sum(x * x)]`` as one map-reduce kernel: exact on small integer-valued data, "
    "else Higham's bound over ``x * x``."))
