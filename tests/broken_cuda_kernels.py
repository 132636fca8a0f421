"""Correct and deliberately broken ``@cuda.jit`` kernels for
``tests/broken_implementations.py`` (run on the CUDA simulator).

Imported on first use only: ``numba.cuda`` binds to the simulator or a GPU
when first imported, and kernels must name ``cuda`` as a module global (the
simulator swaps the module in a kernel's globals, not in closures).
"""

from __future__ import annotations

from typing import Any

from numba import cuda
from numba.cuda.random import xoroshiro128p_uniform_float32


@cuda.jit
def index_1d_checked(out: Any) -> None:
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = i


@cuda.jit
def index_1d_unchecked(out: Any) -> None:
    i = cuda.grid(1)
    out[i] = i


@cuda.jit
def index_2d(out: Any) -> None:
    x, y = cuda.grid(2)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = y * out.shape[1] + x


@cuda.jit
def index_2d_off_by_one(out: Any) -> None:
    x, y = cuda.grid(2)
    if y < out.shape[0] and x <= out.shape[1]:
        out[y, x] = y * out.shape[1] + x


@cuda.jit
def index_2d_swapped(out: Any) -> None:
    # Treats x as the row: right only when the grid is square.
    x, y = cuda.grid(2)
    if x < out.shape[0] and y < out.shape[1]:
        out[x, y] = x * out.shape[1] + y


@cuda.jit
def grid_stride(out: Any) -> None:
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] = i


@cuda.jit
def grid_stride_no_tail(out: Any) -> None:
    # Only whole strides: the last partial stride is skipped.
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, (out.shape[0] // stride) * stride, stride):
        out[i] = i


@cuda.jit
def atomic_sum(x: Any, out: Any) -> None:
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def atomic_sum_full_blocks(x: Any, out: Any) -> None:
    # Only elements of complete blocks: the last partial block is dropped.
    i = cuda.grid(1)
    full = (x.shape[0] // cuda.blockDim.x) * cuda.blockDim.x
    if i < full:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def uniform_pairs(states: Any, out: Any) -> None:
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        # float32 draws are < 1 in both output dtypes (a float64 draw could
        # round up to 1.0 when stored as float32).
        out[i, 0] = xoroshiro128p_uniform_float32(states, start)
        out[i, 1] = xoroshiro128p_uniform_float32(states, start)
