"""Conformance of the stencils: one and several explicit 1-D heat steps (walls at 0) and the
2-D five-point Laplacian.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("heat_step_1d")
def test_heat_step_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """One step reads only the old ``u`` (an in-place update fails: ``u`` must not change)."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("heat_steps_1d")
def test_heat_steps_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``steps`` steps, within the accumulated bound of a stable scheme."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("laplacian_2d")
def test_laplacian_2d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Interior Laplacian, zero boundary rows and columns."""
    check_implementation(impl, request)
