"""NumPy references of the transformation kernels: what ``jax.grad`` / torch autograd
and ``jax.vmap`` / ``torch.func.vmap`` of a correct kernel must return.

The gradients are analytic, computed in float64 (or wider) and rounded once:

* ``grad_sum_of_squares``: ``d/dx sum(x * x) = 2 x``;
* ``grad_weighted_sum``: ``d/dx sum(w * x) = w``;
* ``grad_sigmoid``: ``d/dx sum(sigmoid(x)) = sigmoid'(x)``, evaluated as
  ``e / (1 + e)**2`` with ``e = exp(-|x|)`` (no cancellation, no overflow);
* ``grad_heat_step_1d``: ``d/du sum(g * heat_step_1d(u, alpha)) = H^T g`` with
  ``H`` the (linear) heat step.

``vmap_saxpy`` is the stacked per-item result of ``saxpy`` with the batch on
different axes of the inputs and the output (``in_axes=(None, 0, 1)``,
``out_axes=1``).
"""

from __future__ import annotations

import numpy as np

from .elementwise import saxpy


def grad_sum_of_squares(x: np.ndarray) -> np.ndarray:
    """``2 x`` (exact in floating point).

    >>> grad_sum_of_squares(np.array([1.5, -2.0], np.float32))
    array([ 3., -4.], dtype=float32)
    """
    return np.multiply(x, x.dtype.type(2), dtype=x.dtype)


def grad_weighted_sum(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``w`` in the promoted dtype of ``x`` and ``w`` (the gradient does not depend on ``x``).

    >>> grad_weighted_sum(np.zeros(2), np.array([3.0, -1.0]))
    array([ 3., -1.])
    """
    return np.array(w, dtype=np.result_type(x, w), copy=True)


def grad_sigmoid(x: np.ndarray) -> np.ndarray:
    """``sigmoid(x) * (1 - sigmoid(x))``, computed as ``e / (1 + e)**2``, ``e = exp(-|x|)``.

    The derivative is even in ``x``, and this form neither cancels (as
    ``1 - sigmoid`` does near 1) nor overflows (as ``exp(-x)`` does for very
    negative ``x``).  Evaluated in a wider type and rounded once.

    >>> grad_sigmoid(np.array([0.0, 800.0, -800.0]))
    array([0.25, 0.  , 0.  ])
    """
    work = np.float64 if x.dtype.itemsize < 8 else np.longdouble
    e = np.exp(-np.abs(x.astype(work)))
    return (e / ((1 + e) * (1 + e))).astype(x.dtype)


def heat_step_transpose_terms(g: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``H^T g`` in float64 and, per element, the sum of its terms' magnitudes.

    The heat step writes ``out[i] = (1 - 2a) u[i] + a u[i-1] + a u[i+1]`` for
    interior ``i`` only, so ``u[j]`` receives ``(1 - 2a) g[j]`` when ``j`` is
    interior and ``a g[j-1]``, ``a g[j+1]`` from interior neighbours.
    """
    g64 = g.astype(np.float64)
    a = float(alpha)
    n = g64.shape[0]
    value = np.zeros(n)
    magnitude = np.zeros(n)
    if n > 2:
        interior = slice(1, n - 1)
        # (weight, magnitude of its terms): the centre weight 1 - 2a is formed from 1 and 2a.
        for shift, weight, size in ((0, 1 - 2 * a, 1 + 2 * a), (-1, a, a), (1, a, a)):
            # Output i (interior) contributes weight * g[i] to u[i + shift].
            target = slice(1 + shift, n - 1 + shift)
            value[target] += weight * g64[interior]
            magnitude[target] += size * np.abs(g64[interior])
    return value, magnitude


def grad_heat_step_1d(u: np.ndarray, alpha: float, g: np.ndarray) -> np.ndarray:
    """``d/du sum(g * heat_step_1d(u, alpha))``: ``H^T g`` in ``u``'s dtype.

    >>> grad_heat_step_1d(np.zeros(4), 0.25, np.ones(4))
    array([0.25, 0.75, 0.75, 0.25])
    """
    value, _ = heat_step_transpose_terms(g, alpha)
    return value.astype(u.dtype)


def vmap_saxpy(alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``saxpy(alpha, x[i], y[:, i])`` stacked along axis 1: ``x`` is ``(b, n)``, ``y`` is
    ``(n, b)``, the result ``(n, b)``.

    >>> vmap_saxpy(2.0, np.ones((2, 3)), np.zeros((3, 2)))
    array([[2., 2.],
           [2., 2.],
           [2., 2.]])
    """
    if x.ndim != 2 or y.shape != (x.shape[1], x.shape[0]):
        raise ValueError(f"vmap_saxpy takes x (b, n) and y (n, b), got {x.shape} and {y.shape}")
    dtype = np.result_type(x, y)
    out = np.empty(y.shape, dtype=dtype)
    for i in range(x.shape[0]):
        out[:, i] = saxpy(alpha, x[i], y[:, i])
    return out
