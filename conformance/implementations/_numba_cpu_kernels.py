"""The ``@njit`` kernel bodies behind :mod:`.numba_cpu_impls` (imports Numba).

Only :func:`.numba_cpu_impls.compiled` imports this module, on the first call
of a numba-cpu implementation, so registering the implementations never
imports Numba.  The bodies here are plain Python functions; ``compiled``
turns each into a dispatcher for one explicit signature.

Why explicit signatures: Numba specialises a lazily compiled function on every
array layout it meets (C, F, non-contiguous) as well as on dtypes, and the
suites hand kernels all three layouts.  A ``parallel=True`` specialisation
costs about a second of compilation, so compiling once per dtype with the
general ``A`` layout (which accepts any strides) keeps the suite's compile
time bounded on a small CI machine.

Accumulators are passed in as ``zero`` (``float64(0)`` for float inputs,
``int64(0)`` for integers): floats then accumulate in float64 like the
reference, and integer sums wrap modulo 2**64, which agrees with the wrapped
int32/int64 result once stored into ``out``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

# -- elementwise: serial loops --------------------------------------------------------------
# Elementwise kernels are memory-bound one-liners; ``prange`` would add a
# parfor compilation of about a second per dtype and buy nothing at test sizes.


def vector_add(a: Any, b: Any, out: Any) -> None:
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


def saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    # ``alpha`` arrives as a scalar of out's dtype, so float32 stays float32.
    for i in range(out.shape[0]):
        out[i] = alpha * x[i] + y[i]


def sigmoid(x: Any, out: Any) -> None:
    for i in range(out.shape[0]):
        v = x[i]
        # Evaluate on the side where exp cannot overflow: exp(-|v|) is in (0, 1].
        if v >= 0:
            out[i] = 1.0 / (1.0 + math.exp(-v))
        else:
            e = math.exp(v)
            out[i] = e / (1.0 + e)


def add_one_2d(a: Any) -> None:
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            a[r, c] += 1


def transpose(a: Any, out: Any) -> None:
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[r, c] = a[c, r]


# -- reductions: prange reductions ----------------------------------------------------------
# Numba recognises ``acc += ...`` inside ``prange`` as a reduction: each
# worker thread accumulates privately and the partial sums are combined once.


def sum_(x: Any, out: Any, zero: Any) -> None:
    acc = zero
    for i in prange(x.shape[0]):
        acc += x[i]
    out[0] = acc


def dot(x: Any, y: Any, out: Any, zero: Any) -> None:
    acc = zero
    for i in prange(x.shape[0]):
        acc += (zero + x[i]) * y[i]  # widen first: the product in the accumulator's type
    out[0] = acc


def sum_of_squares(x: Any, out: Any, zero: Any) -> None:
    acc = zero
    for i in prange(x.shape[0]):
        v = zero + x[i]
        acc += v * v
    out[0] = acc


def max_(x: Any, out: Any) -> None:
    best = x[0]  # x is non-empty by contract
    nans = 0
    for i in prange(1, x.shape[0]):
        best = max(best, x[i])  # a max reduction, privatised per thread like +=
        # Python's (and Numba's) max(a, NaN) is a: a NaN after the first element would be
        # dropped, where np.max (the contract) propagates it.  Count them instead.
        if x[i] != x[i]:
            nans += 1
    out[0] = best
    if nans:  # never for integers (x != x is False)
        for i in range(x.shape[0]):
            if x[i] != x[i]:
                out[0] = x[i]
                break


def histogram(x: Any, out: Any, chunks: int) -> None:
    # ``out[x[i]] += 1`` from several threads would race.  Each of ``chunks``
    # (the number of worker threads) counts into its own row of ``partial``
    # instead; the rows are summed at the end.
    nbins = out.shape[0]
    partial = np.zeros((chunks, nbins), dtype=np.int64)
    n = x.shape[0]
    for chunk in prange(chunks):
        for i in range(chunk * n // chunks, (chunk + 1) * n // chunks):
            if 0 <= x[i] < nbins:  # values outside the bins are not counted
                partial[chunk, x[i]] += 1
    for b in range(nbins):
        total = 0
        for chunk in range(chunks):
            total += partial[chunk, b]
        out[b] += total


def monte_carlo_pi(seed: int, out: Any, resolution: float) -> None:
    # One seeded stream (Numba's per-thread Mersenne Twister, seeded here):
    # a serial loop keeps the samples reproducible from ``seed``.  Rounding
    # down to ``resolution`` (2**24 for float32) keeps every sample below 1.0
    # after the store into out's dtype.
    np.random.seed(seed)
    for i in range(out.shape[0]):
        for j in range(2):
            out[i, j] = math.floor(np.random.random() * resolution) / resolution


# -- stencils -------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def _heat_step_into(u: Any, alpha: Any, out: Any) -> None:
    n = out.shape[0]
    for i in prange(1, n - 1):
        out[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1])
    if n > 0:
        out[0] = 0
        out[n - 1] = 0


def heat_step_1d(u: Any, alpha: Any, out: Any) -> None:
    _heat_step_into(u, alpha, out)


def heat_steps_1d(u: Any, alpha: Any, steps: int, out: Any) -> None:
    # Two scratch buffers: a step reads one and writes the other, never both.
    current = u.copy()
    scratch = np.empty_like(current)
    for _ in range(steps):
        _heat_step_into(current, alpha, scratch)
        current, scratch = scratch, current
    for i in prange(out.shape[0]):
        out[i] = current[i]


def laplacian_2d(u: Any, out: Any) -> None:
    rows, cols = out.shape
    for r in prange(rows):
        for c in range(cols):
            if 0 < r < rows - 1 and 0 < c < cols - 1:
                out[r, c] = (u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1]
                             - 4 * u[r, c])
            else:
                out[r, c] = 0


# -- halos: serial copies of 2 * width cells per row --------------------------------------


def halo_exchange_1d(a: Any, width: int) -> None:
    n = a.shape[0]
    for k in range(width):
        a[k] = a[n - 2 * width + k]
        a[n - width + k] = a[width + k]


def halo_exchange_2d(a: Any, width: int) -> None:
    rows, cols = a.shape
    # Rows first, across every column ...
    for k in range(width):
        for c in range(cols):
            a[k, c] = a[rows - 2 * width + k, c]
            a[rows - width + k, c] = a[width + k, c]
    # ... then columns across every row, ghost rows included: the corners.
    for r in range(rows):
        for k in range(width):
            a[r, k] = a[r, cols - 2 * width + k]
            a[r, cols - width + k] = a[r, width + k]


# -- linalg ---------------------------------------------------------------------------------


def matmul(a: Any, b: Any, out: Any, zero: Any) -> None:
    m, n = out.shape
    k = a.shape[1]
    for i in prange(m):
        for j in range(n):
            acc = zero
            for p in range(k):
                acc += (zero + a[i, p]) * b[p, j]
            out[i, j] = acc


#: Edge of the square blocks of ``matmul_tiled``: three 64x64 float64 blocks fit in L1/L2.
TILE = 64


def matmul_tiled(a: Any, b: Any, out: Any, zero: Any) -> None:
    # The CPU analogue of a shared-memory tiled kernel: each parallel task owns
    # a band of TILE rows and walks the k and column ranges in TILE blocks, so
    # the blocks of a and b it reuses stay in cache.  The last band and block
    # are partial whenever a size is not a multiple of TILE.
    m, n = out.shape
    k = a.shape[1]
    for band in prange((m + TILE - 1) // TILE):
        r0 = band * TILE
        r1 = min(r0 + TILE, m)
        acc = np.full((r1 - r0, n), zero)
        for p0 in range(0, k, TILE):
            p1 = min(p0 + TILE, k)
            for c0 in range(0, n, TILE):
                c1 = min(c0 + TILE, n)
                for i in range(r0, r1):
                    for p in range(p0, p1):
                        aip = zero + a[i, p]
                        for j in range(c0, c1):
                            acc[i - r0, j] += aip * b[p, j]
        for i in range(r0, r1):
            for j in range(n):
                out[i, j] = acc[i - r0, j]


#: Kernel -> (body, compiled with ``parallel=True``).
BODIES: dict[str, tuple[Any, bool]] = {
    "vector_add": (vector_add, False),
    "saxpy": (saxpy, False),
    "sigmoid": (sigmoid, False),
    "add_one_2d": (add_one_2d, False),
    "transpose": (transpose, False),
    "sum": (sum_, True),
    "dot": (dot, True),
    "max": (max_, True),
    "weighted_sum": (dot, True),
    "sum_of_squares": (sum_of_squares, True),
    "histogram": (histogram, True),
    "monte_carlo_pi": (monte_carlo_pi, False),
    "heat_step_1d": (heat_step_1d, False),
    "heat_steps_1d": (heat_steps_1d, True),
    "laplacian_2d": (laplacian_2d, True),
    "halo_exchange_1d": (halo_exchange_1d, False),
    "halo_exchange_2d": (halo_exchange_2d, False),
    "matmul": (matmul, True),
    "matmul_tiled": (matmul_tiled, True),
}
