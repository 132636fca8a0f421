"""Conformance of ufunc kernels: ``@vectorize`` (targets cpu, parallel, cuda) and
``@guvectorize`` (layouts ``(n),(n)->()`` and ``(m,n)->(m,n)``), and their kin in NumPy,
JAX, CuPy and torch.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("ufunc_saxpy")
def test_ufunc_saxpy(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``alpha * x + y`` broadcast (``y`` of shape ``(m, n)``, ``(n,)`` or ``(m, 1)``),
    the inputs' float dtype kept, within ``gamma_3 * (|alpha x| + |y|)``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("gufunc_dot")
def test_gufunc_dot(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Layout ``(n),(n)->()`` over a stack of rows: exact on small integer-valued data,
    else Higham's bound per row."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("gufunc_laplacian_2d")
def test_gufunc_laplacian_2d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Layout ``(m,n)->(m,n)``: the five-point Laplacian of every 2-D slice of a stack."""
    check_implementation(impl, request)
