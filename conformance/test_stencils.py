"""Conformance of the stencils: one and several explicit 1-D heat steps (walls at 0) and the
2-D five-point Laplacian.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_heat_step_1d = kernel_test("heat_step_1d", (
    "One step reads only the old ``u`` (an in-place update fails: ``u`` must not change)."))

test_heat_steps_1d = kernel_test("heat_steps_1d", (
    "``steps`` steps, within the accumulated bound of a stable scheme."))

test_laplacian_2d = kernel_test("laplacian_2d", (
    "Interior Laplacian, zero boundary rows and columns."))
