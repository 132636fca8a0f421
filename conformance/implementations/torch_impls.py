"""Bundled PyTorch implementations (backends ``torch-cpu`` and ``torch-cuda``, same code).

``out=`` style: torch ops write ``out`` through ``out=`` (which honours
``out``'s strides) or ``out.copy_(...)``; in-place kernels update ``a``.
Importing this module imports no torch: each body imports it on first call.

The thread-index kernels are not applicable: torch ops expose no thread
index.  ``matmul_tiled`` is not applicable either: torch has no user-level
shared memory (a Triton kernel would be a different framework).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._applicability import INDEX_MAPS, implements_on, not_applicable_on

BACKENDS = ("torch-cpu", "torch-cuda")
NAME = "torch"

F = TypeVar("F", bound=Callable[..., Any])


def _register(kernel: str) -> Callable[[F], F]:
    """Register the decorated function for ``kernel`` on both torch backends."""
    return implements_on(kernel, BACKENDS, NAME)


def _torch() -> Any:
    import torch

    return torch


def _scalar(value: Any, like: Any) -> float | int:
    """``value`` as a Python number of ``like``'s kind; torch computes it in ``like``'s dtype."""
    return float(value) if like.dtype.is_floating_point else int(value)


# -- elementwise ----------------------------------------------------------------------------
@_register("vector_add")
def vector_add(a: Any, b: Any, out: Any) -> None:
    """``torch.add(a, b, out=out)``."""
    _torch().add(a, b, out=out)


@_register("saxpy")
def saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``alpha * x + y`` as a multiply then an add (two roundings, as in NumPy)."""
    torch = _torch()
    torch.add(torch.mul(x, _scalar(alpha, x)), y, out=out)


@_register("sigmoid")
def sigmoid(x: Any, out: Any) -> None:
    """``torch.sigmoid(x, out=out)``."""
    _torch().sigmoid(x, out=out)


@_register("add_one_2d")
def add_one_2d(a: Any) -> None:
    """``a.add_(1)`` in place."""
    a.add_(1)


@_register("transpose")
def transpose(a: Any, out: Any) -> None:
    """``out.copy_(a.T)``."""
    out.copy_(a.T)


# -- reductions -------------------------------------------------------------------------------
def _into(out: Any, value: Any) -> None:
    out.copy_(value.reshape(1))


@_register("sum")
def sum_(x: Any, out: Any) -> None:
    """``out[0] = sum(x)`` accumulated in ``x``'s dtype (torch would widen int32 to int64)."""
    _into(out, _torch().sum(x, dtype=x.dtype))


@_register("dot")
def dot(x: Any, y: Any, out: Any) -> None:
    """``out[0] = sum(x * y)``."""
    _into(out, _torch().sum(x * y, dtype=out.dtype))


@_register("max")
def max_(x: Any, out: Any) -> None:
    """``out[0] = max(x)`` (NaN propagates)."""
    _into(out, _torch().amax(x))


@_register("weighted_sum")
def weighted_sum(x: Any, w: Any, out: Any) -> None:
    """``out[0] = sum(w * x)``."""
    _into(out, _torch().sum(w * x, dtype=out.dtype))


@_register("sum_of_squares")
def sum_of_squares(x: Any, out: Any) -> None:
    """``out[0] = sum(x * x)``."""
    _into(out, _torch().sum(x * x, dtype=out.dtype))


@_register("histogram")
def histogram(x: Any, out: Any) -> None:
    """``out[v] += 1`` per value: ``index_add_`` of ones (atomics on CUDA).  Values outside
    ``[0, len(out))`` land in an extra bin that is dropped (``index_add_`` refuses an index
    out of range, on CUDA with a device-side assert that poisons the context)."""
    torch = _torch()
    nbins = out.shape[0]
    index = torch.where((x >= 0) & (x < nbins), x.to(torch.int64), nbins)
    ones = torch.ones(x.shape, dtype=out.dtype, device=out.device)
    counts = torch.zeros(nbins + 1, dtype=out.dtype, device=out.device)
    counts.index_add_(0, index, ones)
    out += counts[:nbins]


@_register("monte_carlo_pi")
def monte_carlo_pi(seed: int, out: Any) -> None:
    """``out[i] = (u, v)`` from a ``torch.Generator`` seeded with ``seed`` on ``out``'s device."""
    torch = _torch()
    generator = torch.Generator(device=out.device)
    generator.manual_seed(int(seed) % 2**64)
    out.copy_(torch.rand(out.shape, generator=generator, dtype=out.dtype, device=out.device))


# -- stencils and halos -----------------------------------------------------------------------
def _heat_step(u: Any, alpha: float, out: Any) -> None:
    torch = _torch()
    n = u.shape[0]
    if n > 2:
        centre = u[1:-1]
        # (left - 2 centre) + right, scaled, added to centre: the reference's order.
        torch.add(centre, (u[:-2] - 2 * centre + u[2:]) * alpha, out=out[1:-1])
    out[: min(n, 1)] = 0
    out[max(n - 1, 0):] = 0


@_register("heat_step_1d")
def heat_step_1d(u: Any, alpha: Any, out: Any) -> None:
    """One explicit heat step from ``u`` into ``out``, walls held at 0."""
    _heat_step(u, float(alpha), out)


@_register("heat_steps_1d")
def heat_steps_1d(u: Any, alpha: Any, steps: int, out: Any) -> None:
    """``steps`` heat steps; intermediate states live in two scratch tensors."""
    torch = _torch()
    if steps == 0:
        out.copy_(u)
        return
    scratch = [torch.empty_like(u) for _ in range(min(steps - 1, 2))]
    src = u
    for step in range(steps):
        dst = out if step == steps - 1 else scratch[step % 2]
        _heat_step(src, float(alpha), dst)
        src = dst


@_register("laplacian_2d")
def laplacian_2d(u: Any, out: Any) -> None:
    """Five-point Laplacian on the interior, 0 on the boundary."""
    out.zero_()
    if u.shape[0] > 2 and u.shape[1] > 2:
        interior = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        out[1:-1, 1:-1].copy_(interior)


def _halo_axis(a: Any, width: int, axis: int) -> None:
    # narrow() takes explicit bounds (a[-0:] would be the whole axis).  The
    # contract guarantees n >= 3w, so no copy reads cells another one writes.
    n = a.shape[axis]
    a.narrow(axis, 0, width).copy_(a.narrow(axis, n - 2 * width, width))
    a.narrow(axis, n - width, width).copy_(a.narrow(axis, width, width))


@_register("halo_exchange_1d")
def halo_exchange_1d(a: Any, width: int) -> None:
    """Periodic ghost cells in place."""
    if width:
        _halo_axis(a, width, 0)


@_register("halo_exchange_2d")
def halo_exchange_2d(a: Any, width: int) -> None:
    """Periodic ghost cells on both axes; axis 1 after axis 0 fills the corners."""
    if width:
        _halo_axis(a, width, 0)
        _halo_axis(a, width, 1)


# -- linalg -----------------------------------------------------------------------------------
@_register("matmul")
def matmul(a: Any, b: Any, out: Any) -> None:
    """``out = a @ b``; integer matmul on CUDA (no cuBLAS kernel) as a broadcast sum."""
    torch = _torch()
    if a.is_cuda and not a.dtype.is_floating_point:
        out.copy_((a.unsqueeze(2) * b.unsqueeze(0)).sum(dim=1, dtype=out.dtype))
        return
    out.copy_(torch.matmul(a, b))


_NO_THREAD_INDEX = ("torch ops expose no thread index: they cannot choose which thread "
                    "writes which element, so there is no launch to check")
not_applicable_on(INDEX_MAPS, BACKENDS, _NO_THREAD_INDEX)
not_applicable_on(["matmul_tiled"], BACKENDS,
                  "torch has no user-level shared memory to tile through; its matmul "
                  "library tiles itself (checked as matmul)")
