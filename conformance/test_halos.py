"""Conformance of the periodic halo (ghost-cell) exchanges in 1-D and 2-D, corners included."""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_halo_exchange_1d = kernel_test("halo_exchange_1d", (
    "Ghosts of width w filled from the opposite interior edge, in place, exactly."))

test_halo_exchange_2d = kernel_test("halo_exchange_2d", (
    "Both axes and the four corners filled periodically, in place, exactly."))
