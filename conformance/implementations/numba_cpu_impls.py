"""Bundled Numba CPU implementations (backend ``numba-cpu``): ``@njit`` loops,
``parallel=True`` with ``prange`` where work splits across threads.

The loop bodies live in :mod:`._numba_cpu_kernels`; this module only registers
them, so importing it imports no Numba.  :func:`compiled` builds (once per
kernel and argument types) a dispatcher for one explicit signature with
general (``A``) layouts; see that module for why.

Numba's CPU target exposes no thread or block indices (``prange`` hands out
iterations, not thread ids), so the index-map kernels are not applicable.
``matmul_tiled`` is the CPU analogue of shared-memory tiling: cache blocking.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

from ._applicability import INDEX_MAPS, not_applicable_on

BACKEND = "numba-cpu"
NAME = "njit"


def _numba_type(value: Any) -> Any:
    """The Numba type of an argument: arrays with the general ``A`` layout, scalars as typed."""
    import numba

    if isinstance(value, np.ndarray):
        return numba.types.Array(numba.from_dtype(value.dtype), value.ndim, "A")
    return numba.typeof(value)


@functools.cache
def _dispatcher(kernel: str, signature: tuple[Any, ...]) -> Any:
    import numba

    from . import _numba_cpu_kernels

    body, parallel = _numba_cpu_kernels.BODIES[kernel]
    # An explicit signature compiles now and disables further specialisation:
    # C- and F-ordered arrays convert to the A-layout signature when called.
    return numba.njit(numba.void(*signature), parallel=parallel, cache=True)(body)


def compiled(kernel: str, *args: Any) -> Any:
    """The ``@njit`` dispatcher of ``kernel`` for the types of ``args`` (compiled on first use)."""
    return _dispatcher(kernel, tuple(_numba_type(arg) for arg in args))


def _accumulator_zero(dtype: np.dtype) -> Any:
    """Floats accumulate in float64 (like the reference); integers in int64 (wrapping)."""
    return np.float64(0) if dtype.kind == "f" else np.int64(0)


def _run(kernel: str, *args: Any) -> None:
    compiled(kernel, *args)(*args)


def _register(kernel: str) -> Any:
    return implements(kernel, backend=BACKEND, name=NAME, origin="bundled")


# -- elementwise ------------------------------------------------------------------------------


@_register("vector_add")
def vector_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a + b`` (serial ``@njit`` loop)."""
    _run("vector_add", a, b, out)


@_register("saxpy")
def saxpy(alpha: Any, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = alpha * x + y``; ``alpha`` is converted to ``out``'s dtype first."""
    _run("saxpy", out.dtype.type(alpha), x, y, out)


@_register("sigmoid")
def sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    """``out = 1 / (1 + exp(-x))``, evaluated on the side where ``exp`` cannot overflow."""
    _run("sigmoid", x, out)


@_register("add_one_2d")
def add_one_2d(a: np.ndarray) -> None:
    """``a += 1`` in place."""
    _run("add_one_2d", a)


# -- indexing ---------------------------------------------------------------------------------

not_applicable_on(INDEX_MAPS, [BACKEND],
                  "Numba's CPU target has no thread or block indices (prange hands out "
                   "iterations, not thread ids)")


@_register("transpose")
def transpose(a: np.ndarray, out: np.ndarray) -> None:
    """``out = a.T``, looping over ``out`` in row order."""
    _run("transpose", a, out)


# -- reductions -------------------------------------------------------------------------------


@_register("sum")
def sum_(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = sum(x)``: a ``prange`` reduction."""
    _run("sum", x, out, _accumulator_zero(x.dtype))


@_register("dot")
def dot(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = sum(x * y)``: a ``prange`` reduction."""
    _run("dot", x, y, out, _accumulator_zero(out.dtype))


@_register("max")
def max_(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = max(x)``: a ``prange`` max reduction."""
    _run("max", x, out)


@_register("weighted_sum")
def weighted_sum(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = sum(w * x)``: the ``dot`` loop with the weights first."""
    _run("weighted_sum", w, x, out, _accumulator_zero(out.dtype))


@_register("sum_of_squares")
def sum_of_squares(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = sum(x * x)``: a ``prange`` reduction."""
    _run("sum_of_squares", x, out, _accumulator_zero(out.dtype))


@_register("histogram")
def histogram(x: np.ndarray, out: np.ndarray) -> None:
    """``out[v] += 1`` per element: private per-thread counts, summed at the end."""
    import numba

    _run("histogram", x, out, np.int64(numba.get_num_threads()))


@_register("monte_carlo_pi")
def monte_carlo_pi(seed: int, out: np.ndarray) -> None:
    """``out[i] = (u, v)`` from one stream seeded with ``seed`` (24 bits for float32)."""
    resolution = float(2 ** np.finfo(out.dtype).nmant + 1)
    _run("monte_carlo_pi", int(seed), out, resolution)


# -- stencils ---------------------------------------------------------------------------------


@_register("heat_step_1d")
def heat_step_1d(u: np.ndarray, alpha: Any, out: np.ndarray) -> None:
    """One explicit heat step into ``out`` (``prange`` over the interior)."""
    _run("heat_step_1d", u, out.dtype.type(alpha), out)


@_register("heat_steps_1d")
def heat_steps_1d(u: np.ndarray, alpha: Any, steps: int, out: np.ndarray) -> None:
    """``steps`` heat steps ping-ponging between two scratch buffers."""
    _run("heat_steps_1d", u, out.dtype.type(alpha), np.int64(steps), out)


@_register("laplacian_2d")
def laplacian_2d(u: np.ndarray, out: np.ndarray) -> None:
    """Five-point Laplacian, rows in parallel."""
    _run("laplacian_2d", u, out)


# -- halos ------------------------------------------------------------------------------------


@_register("halo_exchange_1d")
def halo_exchange_1d(a: np.ndarray, width: int) -> None:
    """Periodic ghost cells in place."""
    _run("halo_exchange_1d", a, np.int64(width))


@_register("halo_exchange_2d")
def halo_exchange_2d(a: np.ndarray, width: int) -> None:
    """Periodic ghost cells on both axes, rows then columns (corners included)."""
    _run("halo_exchange_2d", a, np.int64(width))


# -- linalg -----------------------------------------------------------------------------------


@_register("matmul")
def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b``: one output row per ``prange`` iteration."""
    _run("matmul", a, b, out, _accumulator_zero(out.dtype))


@_register("matmul_tiled")
def matmul_tiled(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` in cache-sized blocks (the CPU analogue of shared-memory tiles)."""
    _run("matmul_tiled", a, b, out, _accumulator_zero(out.dtype))
