"""Deliberately wrong ``@cuda.jit`` kernels, one bug each, for ``numba_cuda_simulator_checks``.

Imports ``numba.cuda`` at module level: import this module only in a process
where that is meant to be the simulator.  The kernels are module-level
because the simulator runs a kernel with its *global* ``cuda`` swapped for a
per-thread context; a kernel that reaches ``cuda`` through a closure (defined
inside a function that imported it) sees the bare module, without ``grid``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from numba import cuda

from pytest_gpucheck.checking.kernel_launch import LaunchConfig


@cuda.jit
def no_bounds_check(out: Any) -> None:
    i = cuda.grid(1)
    out[i] = i  # threads past the end write too


@cuda.jit
def x_and_y_swapped(out: Any) -> None:
    x, y = cuda.grid(2)
    rows, cols = out.shape
    if x < rows and y < cols:
        out[x, y] = x * cols + y  # x runs along rows: wrong on a non-square grid


@cuda.jit
def full_blocks_only(x: Any, out: Any) -> None:
    i = cuda.grid(1)
    if i < (x.shape[0] // cuda.blockDim.x) * cuda.blockDim.x:  # drops the partial block
        cuda.atomic.add(out, 0, x[i])


def index_map(kernel: Any) -> Callable[..., None]:
    """``(out, launch)`` launching ``kernel`` as the index-map contract says."""

    def run(out: Any, launch: LaunchConfig) -> None:
        kernel[launch.grid, launch.block](out)

    return run


def reduction(kernel: Any, block: int = 32) -> Callable[..., None]:
    """``(x, out)`` launching ``kernel`` with one thread per element."""

    def run(x: Any, out: Any) -> None:
        kernel[max(1, math.ceil(x.shape[0] / block)), block](x, out)

    return run


#: bug -> (kernel it claims to implement, callable)
BROKEN: dict[str, tuple[str, Callable[..., None]]] = {
    "missing bounds check": ("index_map_1d", index_map(no_bounds_check)),
    "x and y swapped": ("index_map_2d", index_map(x_and_y_swapped)),
    "reduction drops the partial block": ("sum", reduction(full_blocks_only)),
}
