"""Conformance of the periodic halo (ghost-cell) exchanges in 1-D and 2-D, corners included.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("halo_exchange_1d")
def test_halo_exchange_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Ghosts of width w filled from the opposite interior edge, in place, exactly."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("halo_exchange_2d")
def test_halo_exchange_2d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Both axes and the four corners filled periodically, in place, exactly."""
    check_implementation(impl, request)
