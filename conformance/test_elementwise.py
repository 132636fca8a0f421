"""Conformance of the elementwise kernels: ``vector_add``, ``saxpy``, ``sigmoid``, ``add_one_2d``.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("vector_add")
def test_vector_add(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out = a + b``: bit-exact (one correctly rounded add), any layout of ``a`` and ``b``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("saxpy")
def test_saxpy(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out = alpha * x + y`` within ``gamma_3 * (|alpha x| + |y|)``, fused or not."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("sigmoid")
def test_sigmoid(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out = 1 / (1 + exp(-x))`` within 4 ULP of the float64 reference."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("add_one_2d")
def test_add_one_2d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``a += 1`` in place on the interior of a guard-banded 2-D buffer."""
    check_implementation(impl, request)
