"""Bundled ``@cuda.jit`` implementations, registered for ``numba-cuda`` *and*
``numba-cudasim``: the very same callables run on a GPU and on Numba's CUDA
simulator, so the CPU tier checks the real kernel code.

The kernels live in :mod:`._numba_cuda_kernels`, imported on first call (never
at registration: ``numba.cuda`` binds to the simulator or the GPU when first
imported).  Each wrapper here takes the contract's arguments, converts scalars
to the output dtype, and launches:

* kernels with a ``launch`` parameter launch exactly
  ``kernel[launch.grid, launch.block]`` as the suite drew it;
* the reductions, ``histogram`` and ``monte_carlo_pi`` choose their own launch
  (their shared-memory block size is a compile-time constant): 256 threads
  per block on a GPU, 32 on the simulator, enough blocks for one element per
  thread, at most 1024 blocks (grid-stride loops cover the rest).

Never run on a real GPU in this project's CI; the simulator runs every one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from pytest_gpucheck.checking.kernel_launch import LaunchConfig

from ._applicability import implements_on

BACKENDS = ("numba-cuda", "numba-cudasim")
NAME = "cuda-jit"

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def kernels() -> Any:
    """The kernel module (imports ``numba.cuda`` on first use)."""
    from . import _numba_cuda_kernels

    return _numba_cuda_kernels


def _register(kernel: str) -> Callable[[F], F]:
    return implements_on(kernel, BACKENDS, NAME)


def _launch(kernel: Any, launch: LaunchConfig, *args: Any) -> None:
    kernel[launch.grid, launch.block](*args)


def _scalar(value: Any, like: Any) -> Any:
    """``value`` as a NumPy scalar of ``like``'s dtype (float32 kernels stay float32)."""
    return np.dtype(like.dtype).type(value)


# -- elementwise ------------------------------------------------------------------------------


@_register("vector_add")
def vector_add(a: Any, b: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = a + b``, grid-stride loop over the drawn launch."""
    _launch(kernels().vector_add, launch, a, b, out)


@_register("saxpy")
def saxpy(alpha: Any, x: Any, y: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = alpha * x + y``."""
    _launch(kernels().saxpy, launch, _scalar(alpha, out), x, y, out)


@_register("sigmoid")
def sigmoid(x: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = 1 / (1 + exp(-x))`` in ``x``'s dtype."""
    _launch(kernels().sigmoid, launch, x, _scalar(1, out), out)


@_register("add_one_2d")
def add_one_2d(a: Any, launch: LaunchConfig) -> None:
    """``a += 1`` in place, 2-D grid-stride loops (x along columns)."""
    _launch(kernels().add_one_2d, launch, a, _scalar(1, a))


# -- indexing ---------------------------------------------------------------------------------


@_register("index_map_1d")
def index_map_1d(out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` written by the thread with global x index ``i``."""
    _launch(kernels().index_map_1d, launch, out)


@_register("index_map_2d")
def index_map_2d(out: Any, launch: LaunchConfig) -> None:
    """Thread (x, y) writes ``out[y, x] = y * cols + x``."""
    _launch(kernels().index_map_2d, launch, out)


@_register("index_map_3d")
def index_map_3d(out: Any, launch: LaunchConfig) -> None:
    """Thread (x, y, z) writes ``out[z, y, x]``, its flat index."""
    _launch(kernels().index_map_3d, launch, out)


@_register("index_map_grid_stride")
def index_map_grid_stride(out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` with a grid-stride loop over a grid smaller than ``out``."""
    _launch(kernels().index_map_grid_stride, launch, out)


@_register("transpose")
def transpose(a: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = a.T``; the launch covers ``out`` (x along its columns)."""
    _launch(kernels().transpose, launch, a, out)


# -- reductions -------------------------------------------------------------------------------


def _reduce(x: Any, y: Any, out: Any, term: int, is_max: bool = False) -> None:
    k = kernels()
    n = x.shape[0]
    if n == 0:
        return  # out already holds the identity; a launch of zero blocks is an error
    dtype = np.dtype(out.dtype)
    identity = (-np.inf if dtype.kind == "f" else np.iinfo(dtype).min) if is_max else 0
    kernel = k.block_reduction(term, is_max, dtype.name, k.OWN_BLOCK)
    kernel[k.own_grid(n), k.OWN_BLOCK](x, y, dtype.type(identity), out)


@_register("sum")
def sum_(x: Any, out: Any) -> None:
    """``out[0] += sum(x)``: block tree reductions in shared memory, one atomic add per block."""
    _reduce(x, x, out, kernels().TERM_X)


@_register("dot")
def dot(x: Any, y: Any, out: Any) -> None:
    """``out[0] += sum(x * y)``, as :func:`sum_`."""
    _reduce(x, y, out, kernels().TERM_XY)


@_register("max")
def max_(x: Any, out: Any) -> None:
    """``out[0] = max(out[0], max(x))``: block tree reductions, one ``atomic.max`` per block;
    then, for floats, a second kernel stores NaN into ``out[0]`` if ``x`` holds one.

    ``max`` in a kernel and ``cuda.atomic.max`` treat NaN as missing (the simulator's follows
    Python's ``max(a, NaN) == a``; the device's is ``fmax``), where ``np.max``, the contract,
    propagates it.  Launched after the reduction on the same stream, the second kernel's
    stores win; every thread that finds a NaN stores one, the same value whoever wins."""
    _reduce(x, x, out, kernels().TERM_X, is_max=True)
    if np.dtype(out.dtype).kind == "f" and x.shape[0]:
        k = kernels()
        k.propagate_nan[k.own_grid(x.shape[0]), k.OWN_BLOCK](x, out)


@_register("weighted_sum")
def weighted_sum(x: Any, w: Any, out: Any) -> None:
    """``out[0] += sum(w * x)``, as :func:`sum_`."""
    _reduce(w, x, out, kernels().TERM_XY)


@_register("sum_of_squares")
def sum_of_squares(x: Any, out: Any) -> None:
    """``out[0] += sum(x * x)``, as :func:`sum_`."""
    _reduce(x, x, out, kernels().TERM_XX)


@_register("histogram")
def histogram(x: Any, out: Any) -> None:
    """``out[v] += 1`` for each ``v`` in ``x``, with ``cuda.atomic.add``."""
    k = kernels()
    n = x.shape[0]
    if n:
        k.histogram[k.own_grid(n), k.OWN_BLOCK](x, out)


@_register("monte_carlo_pi")
def monte_carlo_pi(seed: int, out: Any) -> None:
    """``out[i] = (u, v)``: per-thread xoroshiro128+ streams seeded from ``seed``."""
    kernels().monte_carlo_pi(int(seed), out)


# -- stencils ---------------------------------------------------------------------------------


@_register("heat_step_1d")
def heat_step_1d(u: Any, alpha: Any, out: Any, launch: LaunchConfig) -> None:
    """One explicit heat step from ``u`` into ``out`` (never in place)."""
    _launch(kernels().heat_step_1d, launch, u, _scalar(alpha, out), out)


@_register("heat_steps_1d")
def heat_steps_1d(u: Any, alpha: Any, steps: int, out: Any, launch: LaunchConfig) -> None:
    """``steps`` heat steps, one launch each, ping-ponging between ``out`` and a scratch array.

    The buffers alternate so that the last step writes ``out``: step ``s``
    writes ``out`` when ``steps - 1 - s`` is even.  The first step reads
    ``u``, which is never written.  Launches on one stream run in order, so
    each step sees the whole previous one.
    """
    from numba import cuda

    k = kernels()
    steps = int(steps)
    if steps == 0:
        _launch(k.copy_1d, launch, u, out)
        return
    scratch = cuda.device_array(out.shape, dtype=out.dtype)
    source = u
    for step in range(steps):
        target = out if (steps - 1 - step) % 2 == 0 else scratch
        _launch(k.heat_step_1d, launch, source, _scalar(alpha, out), target)
        source = target


@_register("laplacian_2d")
def laplacian_2d(u: Any, out: Any, launch: LaunchConfig) -> None:
    """Five-point Laplacian; boundary rows and columns set to 0."""
    _launch(kernels().laplacian_2d, launch, u, out)


# -- halos ------------------------------------------------------------------------------------


@_register("halo_exchange_1d")
def halo_exchange_1d(a: Any, width: int, launch: LaunchConfig) -> None:
    """Periodic ghost cells in place; threads ``k < width`` copy one cell per side."""
    _launch(kernels().halo_exchange_1d, launch, a, np.int64(width))


@_register("halo_exchange_2d")
def halo_exchange_2d(a: Any, width: int, launch: LaunchConfig) -> None:
    """Periodic ghost cells on both axes, corners included, in one race-free launch."""
    _launch(kernels().halo_exchange_2d, launch, a, np.int64(width))


# -- linalg -----------------------------------------------------------------------------------


@_register("matmul")
def matmul(a: Any, b: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = a @ b``: one thread per output element (grid-stride), a dot product each."""
    _launch(kernels().matmul, launch, a, b, _scalar(0, out), out)


@_register("matmul_tiled")
def matmul_tiled(a: Any, b: Any, out: Any, launch: LaunchConfig) -> None:
    """``out = a @ b`` with shared-memory tiles the size of the (square) block."""
    block = tuple(launch.block)
    if len(block) != 2 or block[0] != block[1]:
        raise ValueError(f"matmul_tiled needs a square 2-D block, got {launch}")
    kernel = kernels().matmul_tiled(block[0], np.dtype(out.dtype).name)
    _launch(kernel, launch, a, b, _scalar(0, out), out)
