# mypy: disable-error-code="call-arg,var-annotated"
# (numba types cuda.grid as an intrinsic taking a typing context; in a kernel it takes ndim)
"""``@cuda.jit`` kernels of :class:`.ops.NumbaOps`, compiled on first launch.

Imported only when a Numba device backend is used (``numba.cuda`` is imported
here, at module level, because the CUDA simulator swaps ``cuda`` in a kernel's
module globals; a ``cuda`` captured in a closure would not be simulated).
"""

from __future__ import annotations

from typing import Any

from numba import cuda


@cuda.jit
def heat(u: Any, alpha: Any, out: Any) -> None:
    """``out[i] = u[i] + alpha * (u[i-1] - 2 u[i] + u[i+1])`` for the interior ``i``."""
    i = cuda.grid(1) + 1
    if i < u.shape[0] - 1:
        out[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1])


@cuda.jit
def dot(x: Any, y: Any, out: Any) -> None:
    """``out[0] += sum(x * y)`` (``out`` preset to 0)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i] * y[i])


@cuda.jit
def saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``out = alpha * x + y``."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = alpha * x[i] + y[i]


@cuda.jit
def total(x: Any, out: Any) -> None:
    """``out[0] += sum(x)`` (``out`` preset to 0)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])
