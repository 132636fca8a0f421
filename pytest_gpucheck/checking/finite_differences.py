"""Check a gradient against central finite differences of the forward function, with a
derived tolerance: for when no analytic gradient is at hand.

Along a direction ``v`` the central difference ``(f(x + h v) - f(x - h v)) / 2h``
differs from the directional derivative ``g . v`` by at most

* ``h**2 / 6 * M3`` (truncation; ``M3`` bounds the third directional
  derivative ``|d^3/dt^3 f(x + t v)|`` on the segment), plus
* ``E / h`` (rounding; ``E`` bounds the error of one evaluation of ``f``),

and an implementation's gradient ``G`` may differ from ``g`` by its own
allowance ``|(G - g) . v| <= A``.  The step minimising the first two terms is
``h = (3 E / M3)**(1/3)``; for forwards whose third derivative vanishes
(quadratics, linear maps) the central difference is exact up to rounding and
any step works, so ``h = 1``.  Everything is float64 on the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DirectionalCheck:
    """One comparison along one direction, with the terms of its tolerance."""

    directional: float
    finite_difference: float
    step: float
    truncation: float
    rounding: float
    allowance: float

    @property
    def tolerance(self) -> float:
        return self.truncation + self.rounding + self.allowance

    @property
    def error(self) -> float:
        return abs(self.directional - self.finite_difference)

    def problem(self) -> str | None:
        """Why the gradient disagrees with the finite difference, or None."""
        if self.error <= self.tolerance:
            return None
        return (f"gradient . v = {self.directional!r}, but the central difference gives "
                f"{self.finite_difference!r} (h={self.step:.3g}): error {self.error:.3g} > "
                f"tolerance {self.tolerance:.3g} = truncation h^2/6*M3 {self.truncation:.3g} "
                f"+ rounding E/h {self.rounding:.3g} + gradient allowance "
                f"{self.allowance:.3g}")


def step_for(third_derivative: float, evaluation_error: float) -> float:
    """The step minimising ``h**2/6 * M3 + E/h``; 1 when ``M3`` is 0."""
    if third_derivative <= 0.0:
        return 1.0
    return float(np.cbrt(3.0 * max(evaluation_error, np.finfo(np.float64).tiny)
                         / third_derivative))


def directional_check(forward: Callable[[np.ndarray], float], gradient: np.ndarray,
                      x: np.ndarray, direction: np.ndarray, *, third_derivative: float,
                      evaluation_error: float, allowance: float) -> DirectionalCheck:
    """Compare ``gradient . direction`` with the central difference of ``forward`` at ``x``.

    ``third_derivative`` bounds ``|d^3/dt^3 forward(x + t direction)|`` for
    ``|t| <= h``; ``evaluation_error`` bounds the absolute error of one
    evaluation of ``forward``; ``allowance`` bounds ``|(gradient - exact) . direction|``.
    """
    x64 = np.asarray(x, dtype=np.float64)
    v = np.asarray(direction, dtype=np.float64)
    h = step_for(third_derivative, evaluation_error)
    difference = (forward(x64 + h * v) - forward(x64 - h * v)) / (2.0 * h)
    directional = float(np.dot(np.asarray(gradient, dtype=np.float64), v))
    return DirectionalCheck(directional, float(difference), h,
                            h * h / 6.0 * third_derivative, evaluation_error / h, allowance)


__all__ = ["DirectionalCheck", "directional_check", "step_for"]
