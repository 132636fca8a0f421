"""The finite-difference gradient check: its step, its tolerance terms, and that it tells a
right gradient from a wrong one."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_gpucheck.checking.finite_differences import directional_check, step_for


def test_step_balances_truncation_and_rounding() -> None:
    assert step_for(0.0, 1e-12) == 1.0
    h = step_for(0.5, 1e-15)
    # The optimum of h^2/6 * M3 + E/h: derivative h/3 * M3 - E/h^2 = 0.
    assert h / 3 * 0.5 == pytest.approx(1e-15 / h**2)


def _sigmoid_sum(x: np.ndarray) -> float:
    return float(np.sum(1 / (1 + np.exp(-x))))


@pytest.mark.parametrize("seed", range(5))
def test_right_gradient_passes_and_sign_error_fails(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-6, 6, 40)
    v = rng.standard_normal(40)
    s = 1 / (1 + np.exp(-x))
    exact = s * (1 - s)
    kwargs = {"third_derivative": float(np.sum(np.abs(v) ** 3)) / 8,
              "evaluation_error": 48 * 2.0**-53 * 40, "allowance": 0.0}
    assert directional_check(_sigmoid_sum, exact, x, v, **kwargs).problem() is None
    wrong = directional_check(_sigmoid_sum, -exact, x, v, **kwargs)
    message = wrong.problem()
    assert message is not None
    assert "but the central difference gives" in message
    assert "truncation h^2/6*M3" in message


def test_linear_forward_uses_a_unit_step_and_only_rounding() -> None:
    w = np.arange(5.0)
    check = directional_check(lambda x: float(np.dot(w, x)), w, np.ones(5), np.ones(5),
                              third_derivative=0.0, evaluation_error=1e-14, allowance=0.0)
    assert check.step == 1.0
    assert check.truncation == 0.0
    assert check.problem() is None
