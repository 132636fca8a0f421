"""Conformance of the linear algebra: ``matmul`` and the shared-memory tiled ``matmul_tiled``.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("matmul")
def test_matmul(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out = a @ b`` for non-square shapes (including empty ones), per-element Higham bound."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("matmul_tiled")
def test_matmul_tiled(impl: Cell, request: pytest.FixtureRequest) -> None:
    """The tiled kernel on sizes that are not multiples of the tile."""
    check_implementation(impl, request)
