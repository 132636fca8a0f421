"""Conformance of function transformations: gradients (``jax.grad``, torch autograd)
against analytic gradients, ``vmap`` against the stacked per-item results, and JAX
implementations run eagerly against the same contracts as under ``jit``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.checking.finite_differences import directional_check
from pytest_gpucheck.conformance.harness import Cell, check_implementation, kernel_test
from pytest_gpucheck.reference_kernels.stencils import heat_step_1d
from pytest_gpucheck.registry import implementations

test_grad_sum_of_squares = kernel_test("grad_sum_of_squares", "``d/dx sum(x * x) = 2 x``, exactly.")

test_grad_weighted_sum = kernel_test("grad_weighted_sum", "``d/dx sum(w * x) = w``, exactly.")

test_grad_sigmoid = kernel_test("grad_sigmoid", (
    "``d/dx sum(sigmoid(x))`` for ``|x| <= 120``: finite where ``exp(-x)`` overflows."))

test_grad_heat_step_1d = kernel_test("grad_heat_step_1d", (
    "``d/du sum(g * heat_step_1d(u, alpha)) = H^T g``, walls included."))


@pytest.mark.gpu_kernel("grad_sigmoid")
def test_grad_sigmoid_finite_differences(impl: Cell, request: pytest.FixtureRequest) -> None:
    """The gradient of ``sum(sigmoid(x))`` along random directions agrees with central
    differences (step ``(3E/M3)^(1/3)``, ``M3 = sum|v|^3 / 8``)."""
    _check_finite_differences(impl, request)


@pytest.mark.gpu_kernel("grad_heat_step_1d")
def test_grad_heat_step_1d_finite_differences(impl: Cell,
                                              request: pytest.FixtureRequest) -> None:
    """The heat step is linear: central differences are exact up to rounding."""
    _check_finite_differences(impl, request)


@pytest.mark.gpu_kernel("vmap_saxpy")
def test_vmap_saxpy(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``vmap(saxpy, in_axes=(None, 0, 1), out_axes=1)`` equals the stacked per-item saxpy."""
    check_implementation(impl, request)


#: Kernels whose JAX implementations are also checked eagerly (under ``jax.disable_jit``).
EAGER_KERNELS = ("sigmoid", "heat_steps_1d", "vmap_saxpy")


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


# -- finite differences ------------------------------------------------------------------------


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _heat_magnitude(x: np.ndarray, case: Any) -> float:
    alpha = float(case.inputs["alpha"])
    g = np.abs(case.inputs["g"].astype(np.float64))
    return float(np.sum(g) * (1 + 4 * alpha) * np.max(x, initial=0.0))


#: Per gradient kernel: the float64 forward ``f(x, case)`` whose gradient the kernel returns;
#: the sum of its terms' magnitudes at ``|x|`` (what its rounding error scales with); and a
#: bound on its third directional derivative along ``v`` (linear and quadratic forwards
#: have 0; the third derivative of sigmoid is at most 1/8 in magnitude).
FORWARDS: dict[str, tuple[Callable[[np.ndarray, Any], float],
                          Callable[[np.ndarray, Any], float],
                          Callable[[np.ndarray], float]]] = {
    "grad_sum_of_squares": (lambda x, case: float(np.sum(x * x)),
                            lambda x, case: float(np.sum(x * x)), lambda v: 0.0),
    "grad_weighted_sum": (lambda x, case: float(np.sum(case.inputs["w"] * x)),
                          lambda x, case: float(np.sum(np.abs(case.inputs["w"]) * x)),
                          lambda v: 0.0),
    "grad_sigmoid": (lambda x, case: float(np.sum(_sigmoid64(x))),
                     lambda x, case: float(x.size),
                     lambda v: float(np.sum(np.abs(v) ** 3)) / 8.0),
    "grad_heat_step_1d": (
        lambda x, case: float(np.sum(case.inputs["g"].astype(np.float64)
                                     * heat_step_1d(x, float(case.inputs["alpha"])))),
        _heat_magnitude, lambda v: 0.0),
}

#: Rounded operations per term of a forward (the heat step's six, a product, a sum).
FORWARD_OPS = 8


def _check_finite_differences(impl: Cell, request: pytest.FixtureRequest) -> None:
    """The implementation's gradient, dotted with random directions, agrees with central
    differences of the float64 forward within the derived tolerance of
    :mod:`pytest_gpucheck.checking.finite_differences` (the gradient's own allowance is the
    kernel's tolerance rule, summed along the direction)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from pytest_gpucheck.checking import strategies as gst
    from pytest_gpucheck.conformance.specs import spec_for
    from pytest_gpucheck.selection import get_selection

    spec = spec_for(impl.implementation.kernel)
    backend = get_selection(request.config).backend(impl.backend)
    forward, magnitude, third = FORWARDS[spec.name]

    @settings(max_examples=6, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=spec.cases(gst.sizing_for(backend.name)), seed=st.integers(0, 2**16))
    def example(case: Any, seed: int) -> None:
        args = [backend.to_device(v) if isinstance(v, np.ndarray) else v
                for v in (case.inputs[name] for name in spec.arguments)]
        gradient = np.asarray(backend.to_host(impl.implementation.func(*args)))
        x = case.inputs[spec.arguments[0]].astype(np.float64)
        expected = spec.expected(case)
        bound = spec.rule(case, expected).bound
        per_element = np.zeros(x.shape) if bound is None else np.broadcast_to(bound, x.shape)
        v = np.random.default_rng(seed).standard_normal(x.shape)
        # One float64 evaluation at x +- h v: n terms of FORWARD_OPS roundings each, summed,
        # within gamma_(n + FORWARD_OPS) * sum|terms| (Higham).  The step is 1 for forwards
        # without a third derivative and far below 1 otherwise, so |x +- h v| <= |x| + |v|.
        reach = np.abs(x) + np.abs(v)
        evaluation_error = tol.gamma(x.size + FORWARD_OPS, np.float64) * magnitude(reach, case)
        check = directional_check(lambda y: forward(y, case), gradient, x, v,
                                  third_derivative=third(v), evaluation_error=evaluation_error,
                                  allowance=float(np.sum(per_element * np.abs(v))))
        problem = check.problem()
        assert problem is None, (f"{problem} [{spec.name}({case.describe}) on "
                                 f"{impl.id}; direction seed {seed}]")

    example()
