"""Bundled implementations of the transformation kernels: ``jax.grad`` / ``jax.vmap``
(jax-cpu, jax-gpu) and torch autograd / ``torch.func.vmap`` (torch-cpu, torch-cuda),
each applied to a plain forward function written the way users write it.

The gradients differentiate ``sum(f(x))`` (or ``sum(g * heat_step(u))``) of
that forward function, so the result is the gradient the user's own training
or optimisation code would see.  Frameworks without automatic
differentiation or function transformations are not applicable.
"""

from __future__ import annotations

import functools
from typing import Any

from pytest_gpucheck.registry import implements

from ._applicability import not_applicable_elsewhere

KERNELS = ("grad_sum_of_squares", "grad_weighted_sum", "grad_sigmoid", "grad_heat_step_1d",
           "vmap_saxpy")
JAX = ("jax-cpu", "jax-gpu")
TORCH = ("torch-cpu", "torch-cuda")


# -- JAX ---------------------------------------------------------------------------------------
@functools.cache
def _jax_transforms() -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def heat_step(u: Any, alpha: Any) -> Any:
        if u.shape[0] <= 2:
            return jnp.zeros_like(u)
        interior = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
        return jnp.zeros_like(u).at[1:-1].set(interior)

    def saxpy(alpha: Any, x: Any, y: Any) -> Any:
        return alpha * x + y

    return {
        "grad_sum_of_squares": jax.jit(jax.grad(lambda x: jnp.sum(x * x))),
        "grad_weighted_sum": jax.jit(jax.grad(lambda x, w: jnp.sum(w * x))),
        "grad_sigmoid": jax.jit(jax.grad(lambda x: jnp.sum(jax.nn.sigmoid(x)))),
        "grad_heat_step_1d": jax.jit(jax.grad(
            lambda u, alpha, g: jnp.sum(g * heat_step(u, alpha)))),
        # x batched on axis 0, y on axis 1, alpha shared; the batch is axis 1 of the result.
        "vmap_saxpy": jax.jit(jax.vmap(saxpy, in_axes=(None, 0, 1), out_axes=1)),
    }


def _jax(kernel: str) -> Any:
    def call(*args: Any) -> Any:
        return _jax_transforms()[kernel](*args)

    call.__name__ = call.__qualname__ = f"jax_{kernel}"
    call.__doc__ = f"``{kernel}`` with JAX's transformations (under ``jax.jit``)."
    return call


# -- torch -------------------------------------------------------------------------------------
def _torch_heat_step(u: Any, alpha: float) -> Any:
    import torch

    out = torch.zeros_like(u)
    out[1:-1] = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
    return out


def _torch_grad(loss: Any, x: Any, *rest: Any) -> Any:
    import torch

    # A fresh leaf sharing x's storage: autograd never writes to it.
    leaf = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(leaf, *rest), leaf)
    return grad


def torch_grad_sum_of_squares(x: Any) -> Any:
    """``torch.autograd.grad`` of ``sum(x * x)``."""
    return _torch_grad(lambda v: (v * v).sum(), x)


def torch_grad_weighted_sum(x: Any, w: Any) -> Any:
    """``torch.autograd.grad`` of ``sum(w * x)`` with respect to ``x``."""
    return _torch_grad(lambda v, w: (w * v).sum(), x, w)


def torch_grad_sigmoid(x: Any) -> Any:
    """``torch.autograd.grad`` of ``sum(torch.sigmoid(x))``."""
    import torch

    return _torch_grad(lambda v: torch.sigmoid(v).sum(), x)


def torch_grad_heat_step_1d(u: Any, alpha: Any, g: Any) -> Any:
    """``torch.autograd.grad`` of ``sum(g * heat_step(u, alpha))`` with respect to ``u``."""
    return _torch_grad(lambda v, g: (g * _torch_heat_step(v, float(alpha))).sum(), u, g)


def torch_vmap_saxpy(alpha: Any, x: Any, y: Any) -> Any:
    """``torch.func.vmap(saxpy, in_dims=(None, 0, 1), out_dims=1)``."""
    import torch

    if x.shape[0] == 0:  # vmap cannot map over an empty batch; the stack of nothing
        return torch.empty((y.shape[0], 0), dtype=x.dtype, device=x.device)
    return torch.func.vmap(lambda a, xi, yi: a * xi + yi, in_dims=(None, 0, 1),
                           out_dims=1)(float(alpha), x, y)


for _kernel in KERNELS:
    for _backend in JAX:
        implements(_kernel, backend=_backend, name="jax", origin="bundled")(_jax(_kernel))
    for _backend in TORCH:
        implements(_kernel, backend=_backend, name="torch-autograd" if _kernel.startswith(
            "grad") else "torch-func", origin="bundled")(globals()[f"torch_{_kernel}"])

_NO_AUTODIFF = ("{framework} has no automatic differentiation or function transformations "
                "(grad, vmap); differentiate or batch with JAX or torch")
not_applicable_elsewhere(
    KERNELS, JAX + TORCH,
    {"numpy": _NO_AUTODIFF.format(framework="NumPy"),
     "numba-cpu": _NO_AUTODIFF.format(framework="Numba"),
     "numba-cuda": _NO_AUTODIFF.format(framework="Numba"),
     "numba-cudasim": _NO_AUTODIFF.format(framework="Numba"),
     "cupy": _NO_AUTODIFF.format(framework="CuPy"),
     "cuda-python": _NO_AUTODIFF.format(framework="cuda.core")},
    _NO_AUTODIFF.format(framework="this framework"))

__all__ = ["KERNELS"]
