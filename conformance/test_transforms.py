"""Conformance of function transformations: gradients (``jax.grad``, torch autograd)
against analytic gradients, and ``vmap`` against the stacked per-item results.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`conformance.harness`.
"""

from __future__ import annotations

import pytest

from conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("grad_sum_of_squares")
def test_grad_sum_of_squares(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``d/dx sum(x * x) = 2 x``, exactly."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("grad_weighted_sum")
def test_grad_weighted_sum(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``d/dx sum(w * x) = w``, exactly."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("grad_sigmoid")
def test_grad_sigmoid(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``d/dx sum(sigmoid(x))`` for ``|x| <= 120``: finite where ``exp(-x)`` overflows."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("grad_heat_step_1d")
def test_grad_heat_step_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``d/du sum(g * heat_step_1d(u, alpha)) = H^T g``, walls included."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("vmap_saxpy")
def test_vmap_saxpy(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``vmap(saxpy, in_axes=(None, 0, 1), out_axes=1)`` equals the stacked per-item saxpy."""
    check_implementation(impl, request)
