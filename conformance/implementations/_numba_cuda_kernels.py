# Kernel bodies are device code: ``cuda.grid`` and friends are compiler
# intrinsics whose host-side Python stubs do not describe their device types,
# and ``numba.config`` sets its attributes at run time.
# mypy: disable-error-code="call-arg, var-annotated, call-overload, operator"
# mypy: disable-error-code="misc, index, attr-defined"
"""The ``@cuda.jit`` kernels behind :mod:`.numba_cuda_impls` (imports ``numba.cuda``).

Imported only on the first call of a numba-cuda / numba-cudasim
implementation: ``NUMBA_ENABLE_CUDASIM`` is read when ``numba.cuda`` is first
imported, so importing it at registration time could bind the wrong target.
The same kernels run on a real GPU and on the simulator.

Conventions used throughout:

* **Grid-stride loops** (``for i in range(cuda.grid(1), n, cuda.gridsize(1))``)
  wherever a kernel has no reason to rely on the launch covering its domain:
  the loop bound doubles as the bounds check, and any launch is correct.
  The index-map kernels instead map exactly one thread to one element, with
  an explicit bounds check, because that mapping is what they test.
* **x is the last array axis**: ``c, r = cuda.grid(2)`` (column from x, row
  from y), so consecutive threads of a warp touch consecutive elements.
* **Scalars in the output dtype** (``alpha``, ``one``, ``zero``) come from the
  host as NumPy scalars, so float32 kernels never silently compute in float64.
* Kernels whose shared memory depends on the dtype or the block are built by
  cached factories: ``cuda.shared.array`` needs its shape and dtype as
  compile-time constants, which closure variables provide.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numba
import numpy as np
from numba import cuda
from numba.cuda.random import (
    create_xoroshiro128p_states,
    xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)

#: Threads per block of the kernels that choose their own launch.  The
#: simulator runs one Python thread per CUDA thread, so it gets one warp.
OWN_BLOCK = 32 if numba.config.ENABLE_CUDASIM else 256
#: Enough blocks to fill a GPU; grid-stride loops cover any larger input.
MAX_BLOCKS = 1024


def own_grid(n: int, block: int = OWN_BLOCK) -> int:
    """Blocks for ``n`` elements with one element per thread, capped at :data:`MAX_BLOCKS`."""
    return max(1, min(MAX_BLOCKS, (n + block - 1) // block))


# -- elementwise ------------------------------------------------------------------------------


@cuda.jit
def vector_add(a: Any, b: Any, out: Any) -> None:
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = a[i] + b[i]


@cuda.jit
def saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


@cuda.jit
def sigmoid(x: Any, one: Any, out: Any) -> None:
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        v = x[i]
        # Evaluate on the side where exp cannot overflow: its argument is <= 0.
        if v >= 0:
            out[i] = one / (one + math.exp(-v))
        else:
            e = math.exp(v)
            out[i] = e / (one + e)


@cuda.jit
def add_one_2d(a: Any, one: Any) -> None:
    c0, r0 = cuda.grid(2)
    sc, sr = cuda.gridsize(2)
    for r in range(r0, a.shape[0], sr):
        for c in range(c0, a.shape[1], sc):
            a[r, c] += one


@cuda.jit
def copy_1d(source: Any, out: Any) -> None:
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = source[i]


# -- indexing: one thread, one element --------------------------------------------------------


@cuda.jit
def index_map_1d(out: Any) -> None:
    i = cuda.grid(1)
    if i < out.shape[0]:  # the last block usually has threads past the end
        out[i] = i


@cuda.jit
def index_map_2d(out: Any) -> None:
    x, y = cuda.grid(2)
    rows, cols = out.shape
    if y < rows and x < cols:
        out[y, x] = y * cols + x


@cuda.jit
def index_map_3d(out: Any) -> None:
    x, y, z = cuda.grid(3)
    nz, ny, nx = out.shape
    if z < nz and y < ny and x < nx:
        out[z, y, x] = (z * ny + y) * nx + x


@cuda.jit
def index_map_grid_stride(out: Any) -> None:
    # The grid has fewer threads than elements: each thread strides by the grid.
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = i


@cuda.jit
def transpose(a: Any, out: Any) -> None:
    # Threads run along out's rows, so writes coalesce; reads are strided.
    c0, r0 = cuda.grid(2)
    sc, sr = cuda.gridsize(2)
    for r in range(r0, out.shape[0], sr):
        for c in range(c0, out.shape[1], sc):
            out[r, c] = a[c, r]


# -- reductions -------------------------------------------------------------------------------

TERM_X, TERM_XY, TERM_XX = 0, 1, 2


@functools.cache
def block_reduction(term: int, is_max: bool, dtype_name: str, block: int) -> Any:
    """A reduction kernel ``(x, y, identity, out)``: each block reduces to one value, then
    one atomic.

    Each thread first folds a grid-stride slice of the input into a private
    accumulator (so any input size works with a bounded grid), stores it in
    shared memory, and the block combines the ``block`` partials in a tree of
    ``log2(block)`` halving steps, with a barrier after each.  A tree keeps
    every thread busy and has error growing with ``log2(block)`` rather than
    ``block``.  Only thread 0 then touches global memory, with one atomic per
    block: the blocks finish in any order and none is lost, which a plain
    store of partial sums would not guarantee.  Threads whose slice is empty
    contribute ``identity`` (0, or the lowest value for max; a kernel argument
    of the element dtype), so the last, partial block is counted exactly once.
    """
    element = numba.from_dtype(np.dtype(dtype_name))
    if block & (block - 1):
        raise ValueError(f"the tree reduction needs a power-of-two block, got {block}")

    @cuda.jit
    def kernel(x: Any, y: Any, identity: Any, out: Any) -> None:
        partial = cuda.shared.array(block, element)
        tid = cuda.threadIdx.x
        acc = identity
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            if term == TERM_X:
                v = x[i]
            elif term == TERM_XY:
                v = x[i] * y[i]
            else:
                v = x[i] * x[i]
            if is_max:
                acc = max(acc, v)
            else:
                acc += v
        partial[tid] = acc
        cuda.syncthreads()
        step = block // 2
        while step > 0:  # every thread runs every step: the barrier is reached uniformly
            if tid < step:
                if is_max:
                    partial[tid] = max(partial[tid], partial[tid + step])
                else:
                    partial[tid] += partial[tid + step]
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            if is_max:
                cuda.atomic.max(out, 0, partial[0])
            else:
                cuda.atomic.add(out, 0, partial[0])

    return kernel


@cuda.jit
def propagate_nan(x: Any, out: Any) -> None:
    # max's NaN rule (np.max propagates NaN; max() and atomic.max drop it): run after the
    # reduction, so a NaN stored here is the final result.
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if x[i] != x[i]:
            out[0] = x[i]


@cuda.jit
def histogram(x: Any, out: Any) -> None:
    # Many threads may count the same value at once: only an atomic increment
    # makes each of them land.
    # Values outside the bins are not counted (and must not be written).
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if x[i] >= 0 and x[i] < out.shape[0]:
            cuda.atomic.add(out, x[i], 1)


#: Samples each Monte Carlo thread draws.  On a GPU a few per thread keeps
#: thousands of threads busy.  The simulator initialises the random states on
#: the host at about 10 ms each, so there each thread draws many samples
#: (2048 samples: one block of 32 threads, 32 states).
SAMPLES_PER_THREAD = 64 if numba.config.ENABLE_CUDASIM else 4


@functools.cache
def monte_carlo_kernel(dtype_name: str) -> Any:
    """``(states, out)``: thread ``t`` draws its samples from its own xoroshiro128+ state ``t``."""
    single = np.dtype(dtype_name) == np.float32

    @cuda.jit
    def kernel(states: Any, out: Any) -> None:
        t = cuda.grid(1)
        # States are one per launched thread: independent, non-overlapping
        # subsequences of one generator (each 2**64 draws apart).
        for i in range(t, out.shape[0], cuda.gridsize(1)):
            if single:
                out[i, 0] = xoroshiro128p_uniform_float32(states, t)
                out[i, 1] = xoroshiro128p_uniform_float32(states, t)
            else:
                out[i, 0] = xoroshiro128p_uniform_float64(states, t)
                out[i, 1] = xoroshiro128p_uniform_float64(states, t)

    return kernel


def monte_carlo_pi(seed: int, out: Any) -> None:
    """Launch :func:`monte_carlo_kernel` with one random state per thread."""
    n = out.shape[0]
    if n == 0:
        return
    blocks = own_grid((n + SAMPLES_PER_THREAD - 1) // SAMPLES_PER_THREAD)
    states = create_xoroshiro128p_states(blocks * OWN_BLOCK, seed=seed)
    monte_carlo_kernel(out.dtype.name)[blocks, OWN_BLOCK](states, out)


# -- stencils ---------------------------------------------------------------------------------


@cuda.jit
def heat_step_1d(u: Any, alpha: Any, out: Any) -> None:
    n = out.shape[0]
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if i == 0 or i == n - 1:
            out[i] = 0  # the walls are held at zero
        else:
            # u[i] + u[i] is 2 u[i] exactly, without a float64 literal.
            out[i] = u[i] + alpha * (u[i - 1] - (u[i] + u[i]) + u[i + 1])


@cuda.jit
def laplacian_2d(u: Any, out: Any) -> None:
    c0, r0 = cuda.grid(2)
    sc, sr = cuda.gridsize(2)
    rows, cols = out.shape
    for r in range(r0, rows, sr):
        for c in range(c0, cols, sc):
            if 0 < r < rows - 1 and 0 < c < cols - 1:
                centre = u[r, c]
                out[r, c] = (u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1]
                             - ((centre + centre) + (centre + centre)))  # 4 u, exactly
            else:
                out[r, c] = 0


# -- halos ------------------------------------------------------------------------------------


@cuda.jit
def halo_exchange_1d(a: Any, width: Any) -> None:
    # Thread k < width fills ghost k on each side; it reads interior cells
    # only, which no thread writes, so there is no race.
    n = a.shape[0]
    for k in range(cuda.grid(1), width, cuda.gridsize(1)):
        a[k] = a[n - 2 * width + k]
        a[n - width + k] = a[width + k]


@cuda.jit
def halo_exchange_2d(a: Any, width: Any) -> None:
    # Exchanging rows, then columns, needs a grid-wide barrier in between
    # (the corners come from ghost rows).  The composed result has a closed
    # form instead: ghost (r, c) receives interior cell
    # ((r - w) mod (rows - 2w), (c - w) mod (cols - 2w)).  Every thread reads
    # interior cells only and writes ghost cells only: one launch, no race.
    c0, r0 = cuda.grid(2)
    sc, sr = cuda.gridsize(2)
    rows, cols = a.shape
    inner_rows = rows - 2 * width
    inner_cols = cols - 2 * width
    for r in range(r0, rows, sr):
        ghost_row = r < width or r >= rows - width
        for c in range(c0, cols, sc):
            if ghost_row or c < width or c >= cols - width:
                # Python semantics for % (non-negative for a positive divisor).
                a[r, c] = a[width + (r - width) % inner_rows, width + (c - width) % inner_cols]


# -- linalg -----------------------------------------------------------------------------------


@cuda.jit
def matmul(a: Any, b: Any, zero: Any, out: Any) -> None:
    c0, r0 = cuda.grid(2)
    sc, sr = cuda.gridsize(2)
    rows, cols = out.shape
    for r in range(r0, rows, sr):
        for c in range(c0, cols, sc):
            acc = zero
            for p in range(a.shape[1]):
                acc += a[r, p] * b[p, c]
            out[r, c] = acc


@functools.cache
def matmul_tiled(tile: int, dtype_name: str) -> Any:
    """A ``(a, b, zero, out)`` kernel for square ``tile x tile`` blocks, built per tile and
    dtype (``zero`` is 0 in out's dtype).

    Each block computes ``tile x tile`` outputs.  It walks the inner dimension
    in steps of ``tile``: all threads of the block load one element each of a
    tile of ``a`` and of ``b`` into shared memory, wait at a barrier, multiply
    the two tiles from shared memory, and wait again before the next load
    overwrites them.  Every input element is thus read from global memory
    ``tile`` times fewer than in the naive kernel.  Loads past an edge store
    0, so partial tiles need no special case in the inner loop.  Blocks stride
    over the output tiles, so any grid is correct; the loop bounds depend on
    block indices only, so all threads of a block reach every barrier.
    """
    element = numba.from_dtype(np.dtype(dtype_name))

    @cuda.jit
    def kernel(a: Any, b: Any, zero: Any, out: Any) -> None:
        tile_a = cuda.shared.array((tile, tile), element)
        tile_b = cuda.shared.array((tile, tile), element)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        rows, cols = out.shape
        inner = a.shape[1]
        for tile_row in range(cuda.blockIdx.y, (rows + tile - 1) // tile, cuda.gridDim.y):
            for tile_col in range(cuda.blockIdx.x, (cols + tile - 1) // tile, cuda.gridDim.x):
                r = tile_row * tile + ty
                c = tile_col * tile + tx
                acc = zero
                for start in range(0, inner, tile):
                    ka = start + tx
                    kb = start + ty
                    tile_a[ty, tx] = a[r, ka] if r < rows and ka < inner else zero
                    tile_b[ty, tx] = b[kb, c] if kb < inner and c < cols else zero
                    cuda.syncthreads()
                    for p in range(tile):
                        acc += tile_a[ty, p] * tile_b[p, tx]
                    cuda.syncthreads()
                if r < rows and c < cols:
                    out[r, c] = acc

    return kernel
