"""Conformance of the reductions: ``sum``, ``dot``, ``max``, ``weighted_sum``, ``sum_of_squares``,
``histogram`` and the statistical ``monte_carlo_pi``.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("sum")
def test_sum(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[0] = sum(x)``: exact on integer-valued inputs: a dropped or doubled element fails."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("dot")
def test_dot(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[0] = sum(x * y)``: exact on small integer-valued inputs, else Higham's bound."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("max")
def test_max(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[0] = max(x)``, exact, ``out`` preset to the identity (-inf / the minimum)."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("weighted_sum")
def test_weighted_sum(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[0] = sum(w * x)``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("sum_of_squares")
def test_sum_of_squares(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[0] = sum(x * x)``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("histogram")
def test_histogram(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out[v]`` counts the elements equal to ``v`` (atomics), exactly."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("monte_carlo_pi")
def test_monte_carlo_pi(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Samples uniform in [0, 1)^2: pi within a z-bound (false alarm 1e-6),
    uniform bins, and no repeated points (threads must not share a random stream)."""
    check_implementation(impl, request)
