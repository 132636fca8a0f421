"""Conformance of function transformations: gradients (``jax.grad``, torch autograd)
against analytic gradients, ``vmap`` against the stacked per-item results, and JAX
implementations run eagerly against the same contracts as under ``jit``.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`conformance.harness`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest

from conformance.harness import Cell, check_implementation
from pytest_gpucheck.registry import implementations


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


#: Kernels whose JAX implementations are also checked eagerly (under ``jax.disable_jit``).
EAGER_KERNELS = ("sigmoid", "heat_steps_1d", "grad_heat_step_1d", "vmap_saxpy")


@pytest.mark.gpu_backends("jax-cpu", "jax-gpu")
@pytest.mark.gpu_family("transforms")
@pytest.mark.parametrize("kernel", EAGER_KERNELS)
def test_eager_matches_the_contract_too(kernel: str, gpu_backend: Any,
                                        request: pytest.FixtureRequest) -> None:
    """``jit`` against eager execution: every JAX implementation of ``kernel`` (the jitted
    one is checked by the kernel's own test) meets the same contract, with the same
    tolerance, when run eagerly, op by op.  Code that only works when traced (or only
    eagerly) is caught on the side where it is wrong."""
    origin = request.config.getoption("gpu_impls", "all")
    found = implementations(kernel=kernel, backend=gpu_backend.name,
                            origin=None if origin == "all" else origin)
    if not found:
        pytest.skip(f"no {'' if origin == 'all' else origin + ' '}implementation of {kernel} "
                    f"registered for {gpu_backend.name}")
    for impl in sorted(found, key=lambda i: i.name):
        eager = dataclasses.replace(impl, func=_eagerly(impl.func), name=f"{impl.name}-eager")
        check_implementation(Cell(gpu_backend.name, eager), request)


def _eagerly(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        import jax

        with jax.disable_jit():
            return func(*args, **kwargs)

    return run
