"""Correct and deliberately broken ``@cuda.jit`` kernels for
``tests/broken_implementations.py`` (run on the CUDA simulator).

Imported on first use only: ``numba.cuda`` binds to the simulator or a GPU
when first imported, and kernels must name ``cuda`` as a module global (the
simulator swaps the module in a kernel's globals, not in closures).
"""

from __future__ import annotations

from typing import Any

from numba import cuda, float64, int64
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


@cuda.jit
def grid_stride_block_start(out: Any) -> None:
    # Starts at the thread's index in its block, not in the grid: with two or more
    # blocks every block walks the same elements and some are never written.
    stride = cuda.gridsize(1)
    for i in range(cuda.threadIdx.x, out.shape[0], stride):
        out[i] = i


@cuda.jit
def index_3d(out: Any) -> None:
    x, y, z = cuda.grid(3)
    nz, ny, nx = out.shape
    if z < nz and y < ny and x < nx:
        out[z, y, x] = (z * ny + y) * nx + x


@cuda.jit
def index_3d_zx_swapped(out: Any) -> None:
    # z and x exchanged throughout: right whenever nz == nx.
    x, y, z = cuda.grid(3)
    nz, ny, nx = out.shape
    if z < nx and y < ny and x < nz:
        out[x, y, z] = (x * ny + y) * nz + z


@cuda.jit
def block_partial_sums(x: Any, partials: Any, halving: int) -> None:
    # Shared-memory tree reduction of each block into partials[block].  With
    # halving=1 the stride is halved each step (right for power-of-two blocks
    # only: an odd active count drops its last element); else it is rounded up.
    cache = cuda.shared.array(32, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[tid] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    active = cuda.blockDim.x
    while active > 1:
        half = active // 2 if halving == 1 else (active + 1) // 2
        if tid < active - half:
            cache[tid] += cache[tid + half]
        cuda.syncthreads()
        active = half
    if tid == 0:
        partials[cuda.blockIdx.x] = cache[0]


@cuda.jit
def block_partial_sums_int(x: Any, partials: Any, halving: int) -> None:
    # block_partial_sums for integer data: int64 partials, which wrap as the contract's
    # integer sums do (float64 ones are wrong beyond 2**53: the integer extremes class).
    cache = cuda.shared.array(32, int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[tid] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()
    active = cuda.blockDim.x
    while active > 1:
        half = active // 2 if halving == 1 else (active + 1) // 2
        if tid < active - half:
            cache[tid] += cache[tid + half]
        cuda.syncthreads()
        active = half
    if tid == 0:
        partials[cuda.blockIdx.x] = cache[0]


@cuda.jit
def matmul_rows(a: Any, b: Any, out: Any, rotate: int, zero: Any) -> None:
    # One thread per element.  With rotate=1 each thread starts its dot product at
    # blockDim.x % k and wraps around: the summation order, and so the rounding,
    # changes with the launch (each result is still within the Higham bound).
    col, row = cuda.grid(2)
    m, k = a.shape
    n = b.shape[1]
    if row < m and col < n:
        offset = cuda.blockDim.x % k if rotate == 1 and k > 0 else 0
        acc = zero  # out's dtype: integer products wrap as the contract's do
        for t in range(k):
            p = (t + offset) % k
            acc += a[row, p] * b[p, col]
        out[row, col] = acc
