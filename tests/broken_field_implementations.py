"""Deliberately broken (and matching correct) implementations of the ufunc, transforms, fused,
multi-device and grid-sync kernels, written the way a user writes them in a
``conftest.py``.

``tests/conformance/test_field_suites_reject_broken.py`` copies this file into a fresh
project as its ``conftest.py`` and runs ``pytest --gpu-conformance
--gpu-impls=user`` there: every ``broken_*`` implementation must fail with the
message of the check that exists to catch it, and every ``good`` one must
pass.  Each bug is one a real kernel author makes.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import settings

import pytest_gpucheck

# Enough derandomized examples that each bug is met in every run (the simulator
# gets a quarter of them), few enough to keep the run fast.
settings.register_profile("proof", max_examples=24, derandomize=True, deadline=None,
                          database=None)


# -- @vectorize: the output dtype ---------------------------------------------------------------
@functools.cache
def _saxpy_ufunc(signatures: tuple[str, ...]) -> Any:
    import numba

    return numba.vectorize(list(signatures))(lambda alpha, x, y: alpha * x + y)


@pytest_gpucheck.implements("ufunc_saxpy", backend="numba-cpu", name="good")
def good_saxpy(alpha: Any, x: Any, y: Any) -> Any:
    return _saxpy_ufunc(("float32(float32, float32, float32)",
                         "float64(float64, float64, float64)"))(alpha, x, y)


@pytest_gpucheck.implements("ufunc_saxpy", backend="numba-cpu", name="broken_output_dtype")
def broken_saxpy_output_dtype(alpha: Any, x: Any, y: Any) -> Any:
    """Only a float64 loop: float32 inputs are cast up and the result stays float64."""
    return _saxpy_ufunc(("float64(float64, float64, float64)",))(alpha, x, y)


# -- @guvectorize: the core-dimension layout ----------------------------------------------------
def _laplacian_2d_core(u: Any, out: Any) -> None:
    m, n = u.shape
    for i in range(m):
        for j in range(n):
            if 0 < i < m - 1 and 0 < j < n - 1:
                out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * u[i, j]
            else:
                out[i, j] = 0


def _laplacian_row_core(u: Any, out: Any) -> None:
    n = u.shape[0]
    for j in range(n):
        if 0 < j < n - 1:
            out[j] = u[j - 1] + u[j + 1] - 2 * u[j]
        else:
            out[j] = 0


@functools.cache
def _laplacian(layout: str) -> Any:
    import numba

    dims = "[:, :]" if layout == "(m,n)->(m,n)" else "[:]"
    core = _laplacian_2d_core if layout == "(m,n)->(m,n)" else _laplacian_row_core
    return numba.guvectorize([f"void(float32{dims}, float32{dims})",
                              f"void(float64{dims}, float64{dims})"], layout)(core)


@pytest_gpucheck.implements("gufunc_laplacian_2d", backend="numba-cpu", name="good")
def good_laplacian(u: Any) -> Any:
    return _laplacian("(m,n)->(m,n)")(u)


@pytest_gpucheck.implements("gufunc_laplacian_2d", backend="numba-cpu",
                            name="broken_core_layout")
def broken_laplacian_core_layout(u: Any) -> Any:
    """Declares the rows as the core, ``(n)->(n)``: each row is a 1-D problem, so the
    vertical neighbours are never read."""
    return _laplacian("(n)->(n)")(u)


# -- jax.vmap: in_axes ----------------------------------------------------------------------
def _vmap_saxpy(in_axes: tuple[Any, ...]) -> Any:
    import jax

    return jax.vmap(lambda a, x, y: a * x + y, in_axes=in_axes, out_axes=1)


@pytest_gpucheck.implements("vmap_saxpy", backend="jax-cpu", name="good")
def good_vmap(alpha: Any, x: Any, y: Any) -> Any:
    return _vmap_saxpy((None, 0, 1))(alpha, x, y)


@pytest_gpucheck.implements("vmap_saxpy", backend="jax-cpu", name="broken_in_axes")
def broken_vmap_in_axes(alpha: Any, x: Any, y: Any) -> Any:
    """Maps ``y`` over axis 0, where its batch is axis 1."""
    return _vmap_saxpy((None, 0, 0))(alpha, x, y)


# -- gradients: a sign error, a missing term ------------------------------------------------
@functools.cache
def _sigmoid_with_gradient(sign: float) -> Any:
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def sigmoid(x: Any) -> Any:
        return jax.nn.sigmoid(x)

    def forward(x: Any) -> Any:
        s = jax.nn.sigmoid(x)
        return s, s

    def backward(s: Any, g: Any) -> Any:
        return (sign * g * s * (1 - s),)

    sigmoid.defvjp(forward, backward)
    return jax.grad(lambda x: jnp.sum(sigmoid(x)))


@pytest_gpucheck.implements("grad_sigmoid", backend="jax-cpu", name="good")
def good_grad_sigmoid(x: Any) -> Any:
    return _sigmoid_with_gradient(1.0)(x)


@pytest_gpucheck.implements("grad_sigmoid", backend="jax-cpu", name="broken_sign")
def broken_grad_sigmoid_sign(x: Any) -> Any:
    """A hand-written backward pass with the sign flipped."""
    return _sigmoid_with_gradient(-1.0)(x)


def _heat_step_function(keep_neighbours: bool) -> Any:
    import torch

    class HeatStep(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, u: Any, alpha: float) -> Any:
            ctx.alpha = alpha
            out = torch.zeros_like(u)
            out[1:-1] = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            a = ctx.alpha
            grad = torch.zeros_like(g)
            grad[1:-1] += (1 - 2 * a) * g[1:-1]
            if keep_neighbours:
                grad[:-2] += a * g[1:-1]
                grad[2:] += a * g[1:-1]
            return grad, None

    return HeatStep.apply


def _torch_heat_gradient(u: Any, alpha: Any, g: Any, keep_neighbours: bool) -> Any:
    import torch

    leaf = u.detach().requires_grad_(True)
    loss = (g * _heat_step_function(keep_neighbours)(leaf, float(alpha))).sum()
    (grad,) = torch.autograd.grad(loss, leaf)
    return grad


@pytest_gpucheck.implements("grad_heat_step_1d", backend="torch-cpu", name="good")
def good_heat_gradient(u: Any, alpha: Any, g: Any) -> Any:
    return _torch_heat_gradient(u, alpha, g, keep_neighbours=True)


@pytest_gpucheck.implements("grad_heat_step_1d", backend="torch-cpu",
                            name="broken_missing_term")
def broken_heat_gradient_missing_term(u: Any, alpha: Any, g: Any) -> Any:
    """A custom backward pass that keeps the diagonal and drops the neighbours' terms."""
    return _torch_heat_gradient(u, alpha, g, keep_neighbours=False)


# -- shard_map: psum over the wrong axis, ppermute the wrong way -------------------------------
def _mesh_2x2() -> Any:
    import jax
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices("cpu")[:4]).reshape(2, 2), ("x", "y"))


@functools.cache
def _sharded_sum_function(axes: Any) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    # check_vma=False, as code written for shard_map's former check_rep=False has it:
    # JAX then trusts out_specs=P() to be replicated.
    return jax.jit(jax.shard_map(
        lambda b: jax.lax.psum(jnp.sum(b, dtype=b.dtype), axes).reshape(1),
        mesh=_mesh_2x2(), in_specs=P(("x", "y")), out_specs=P(), check_vma=False))


def _sharded_sum(x: Any, axes: Any) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    padded = jnp.concatenate([x, jnp.zeros((-x.shape[0]) % 4, x.dtype)])
    padded = jax.device_put(padded, NamedSharding(_mesh_2x2(), P(("x", "y"))))
    total = _sharded_sum_function(axes)(padded)
    return jax.device_put(total, next(iter(x.devices())))


@pytest_gpucheck.implements("sharded_sum", backend="jax-cpu", name="good")
def good_sharded_sum(x: Any) -> Any:
    return _sharded_sum(x, ("x", "y"))


@pytest_gpucheck.implements("sharded_sum", backend="jax-cpu", name="broken_psum_axis")
def broken_sharded_sum_axis(x: Any) -> Any:
    """``psum`` over ``'x'`` only: the partial sums along ``'y'`` are never combined."""
    return _sharded_sum(x, "x")


@functools.cache
def _sharded_heat_function(n: int, reverse: bool) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    devices = jax.devices("cpu")[:4]
    count = len(devices)
    right = [(i, i + 1) for i in range(count - 1)]
    left = [(i + 1, i) for i in range(count - 1)]
    if reverse:
        right, left = left, right

    def local(block: Any, index: Any, alpha: Any) -> Any:
        ghost_left = jax.lax.ppermute(block[-1:], "i", right)
        ghost_right = jax.lax.ppermute(block[:1], "i", left)
        ext = jnp.concatenate([ghost_left, block, ghost_right])
        update = ext[1:-1] + alpha * (ext[:-2] - 2 * ext[1:-1] + ext[2:])
        return jnp.where((index > 0) & (index < n - 1), update, 0)

    mesh = Mesh(np.array(devices), ("i",))
    return mesh, jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P("i"), P("i"), P()),
                                       out_specs=P("i")))


def _sharded_heat(u: Any, alpha: Any, reverse: bool) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = u.shape[0]
    mesh, step = _sharded_heat_function(n, reverse)
    shards = NamedSharding(mesh, P("i"))
    pad = (-n) % 4
    padded = jax.device_put(jnp.concatenate([u, jnp.zeros(pad, u.dtype)]), shards)
    index = jax.device_put(jnp.arange(n + pad), shards)
    out = step(padded, index, jnp.asarray(alpha, u.dtype))
    return jax.device_put(out[:n], next(iter(u.devices())))


@pytest_gpucheck.implements("sharded_heat_step_1d", backend="jax-cpu", name="good")
def good_sharded_heat(u: Any, alpha: Any) -> Any:
    return _sharded_heat(u, alpha, reverse=False)


@pytest_gpucheck.implements("sharded_heat_step_1d", backend="jax-cpu",
                            name="broken_ppermute_direction")
def broken_sharded_heat_direction(u: Any, alpha: Any) -> Any:
    """Sends each shard's last cell left and first cell right: the ghosts come from the
    wrong neighbours."""
    return _sharded_heat(u, alpha, reverse=True)


# -- cooperative kernel: grid.sync() -------------------------------------------------------
@functools.cache
def _heat_kernel(grid_sync: bool) -> Any:
    # Imports numba.cuda: in the simulator child, the simulator.
    import grid_sync_user_kernels

    return grid_sync_user_kernels.GRID if grid_sync else grid_sync_user_kernels.BLOCK


def _run_heat_kernel(kernel: Any, u: Any, alpha: Any, steps: Any, out: Any,
                     blocks: Any) -> None:
    """Launch ``kernel`` on ``blocks(n, block, args)`` blocks of 8 threads, its scratch
    poisoned with NaN: a cell read before any thread of this launch wrote it shows."""
    import numpy as np
    from numba import cuda

    n = u.shape[0]
    if n == 0:
        return
    block = 8
    a = cuda.to_device(np.full(n, np.nan, dtype=out.dtype))
    b = cuda.to_device(np.full(n, np.nan, dtype=out.dtype))
    args = (u, a, b, out, out.dtype.type(alpha), int(steps))
    kernel[blocks(n, block, kernel, args), block](*args)
    cuda.synchronize()


def _cooperative_blocks(n: int, block: int, kernel: Any, args: Any) -> int:
    """At most what can be resident at once (1 on the simulator): the documented way."""
    overloads = kernel.specialize(*args).overloads
    overload = next(iter(overloads.values()), None) or overloads[()]
    return max(1, min(-(-n // block), int(overload.max_cooperative_grid_blocks(block))))


@pytest_gpucheck.implements("heat_steps_grid_sync", backend="numba-cudasim", name="good")
def good_grid_sync(u: Any, alpha: Any, steps: Any, out: Any) -> None:
    _run_heat_kernel(_heat_kernel(True), u, alpha, steps, out, _cooperative_blocks)


@pytest_gpucheck.implements("heat_steps_grid_sync", backend="numba-cudasim",
                            name="broken_too_many_blocks")
def broken_grid_sync_too_many_blocks(u: Any, alpha: Any, steps: Any, out: Any) -> None:
    """The right kernel launched on a fixed grid of 4 blocks, more than can be resident at
    once: a GPU refuses the launch past ``max_cooperative_grid_blocks``, and the
    simulator cannot synchronise blocks at all."""
    _run_heat_kernel(_heat_kernel(True), u, alpha, steps, out, lambda *_: 4)


@pytest_gpucheck.implements("heat_steps_grid_sync", backend="numba-cudasim",
                            name="broken_block_sync")
def broken_grid_sync_block_only(u: Any, alpha: Any, steps: Any, out: Any) -> None:
    """Synchronises with ``cuda.syncthreads()``, the block, not the grid, on one block per 8
    cells: a block reads its neighbour block's edge cell before that block ran (the
    simulator runs blocks one after another, so this is deterministic there)."""
    _run_heat_kernel(_heat_kernel(False), u, alpha, steps, out, lambda n, block, *_:
                     -(-n // block))


# -- fused kernels: a user's own, jitted so that XLA fuses them ----------------------------------
@functools.cache
def _jit(function: Any, *static: str) -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 cases stay float64
    return jax.jit(function, static_argnames=static)


def _fused_saxpy(alpha: Any, x: Any, y: Any) -> Any:
    return alpha.astype(x.dtype) * x + y


def _fused_saxpy_without_alpha(alpha: Any, x: Any, y: Any) -> Any:
    """Refactored into one fused expression, the scale was lost: ``x + y``."""
    return x + y


def _fused_sum_of_squares(x: Any) -> Any:
    import jax.numpy as jnp

    return jnp.sum(x * x, dtype=x.dtype).reshape(1)


def _fused_sum_forgetting_the_square(x: Any) -> Any:
    """The map step of the map-reduce was dropped: ``sum(x)``."""
    import jax.numpy as jnp

    return jnp.sum(x, dtype=x.dtype).reshape(1)


@pytest_gpucheck.implements("fused_saxpy", backend="jax-cpu", name="good")
def good_fused_saxpy(alpha: Any, x: Any, y: Any) -> Any:
    return _jit(_fused_saxpy)(alpha, x, y)


@pytest_gpucheck.implements("fused_saxpy", backend="jax-cpu", name="broken_drops_alpha")
def broken_fused_saxpy_drops_alpha(alpha: Any, x: Any, y: Any) -> Any:
    return _jit(_fused_saxpy_without_alpha)(alpha, x, y)


@pytest_gpucheck.implements("fused_sum_of_squares", backend="jax-cpu", name="good")
def good_fused_sum_of_squares(x: Any) -> Any:
    return _jit(_fused_sum_of_squares)(x)


@pytest_gpucheck.implements("fused_sum_of_squares", backend="jax-cpu",
                            name="broken_forgets_square")
def broken_fused_sum_of_squares(x: Any) -> Any:
    return _jit(_fused_sum_forgetting_the_square)(x)


# -- jax.jit against eager execution -------------------------------------------------------------
def _sigmoid_with_a_concrete_fast_path(x: Any) -> Any:
    """Concrete arrays skip JAX's dispatch through NumPy, in float64 "for accuracy": under
    ``jax.jit`` the input is a tracer and the JAX path (right) runs; run eagerly the fast
    path returns float64 for float32 input."""
    import jax
    import jax.numpy as jnp

    if not isinstance(x, jax.core.Tracer):
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))
    one = jnp.ones((), dtype=x.dtype)
    return one / (one + jnp.exp(-x))


@pytest_gpucheck.implements("sigmoid", backend="jax-cpu", name="broken_concrete_fast_path")
def broken_sigmoid_concrete_fast_path(x: Any) -> Any:
    return _jit(_sigmoid_with_a_concrete_fast_path)(x)


def _heat_step(u: Any, alpha: Any) -> Any:
    import jax.numpy as jnp

    if u.shape[0] < 3:
        return jnp.zeros_like(u)
    interior = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
    zero = jnp.zeros((1,), dtype=u.dtype)
    return jnp.concatenate([zero, interior, zero])


def _heat_steps(u: Any, alpha: Any, steps: Any) -> Any:
    import jax
    import jax.numpy as jnp

    alpha = jnp.asarray(alpha, dtype=u.dtype)
    return jax.lax.fori_loop(0, steps, lambda _, state: _heat_step(state, alpha), u)


#: The diffusion number, set by the driver before each run (a module-level setting).
SETTINGS = {"alpha": 0.25}


def _heat_steps_reading_settings(u: Any, steps: Any) -> Any:
    """Reads ``SETTINGS`` when traced: the jitted function keeps the alpha of its first
    call for every later call with the same shape and dtype; run eagerly it reads the
    current one."""
    return _heat_steps(u, SETTINGS["alpha"], steps)


@pytest_gpucheck.implements("heat_steps_1d", backend="jax-cpu", name="good")
def good_heat_steps(u: Any, alpha: Any, steps: Any) -> Any:
    return _jit(_heat_steps)(u, alpha, steps)


@pytest_gpucheck.implements("heat_steps_1d", backend="jax-cpu", name="broken_stale_global")
def broken_heat_steps_stale_global(u: Any, alpha: Any, steps: Any) -> Any:
    SETTINGS["alpha"] = float(alpha)
    return _jit(_heat_steps_reading_settings)(u, steps)
