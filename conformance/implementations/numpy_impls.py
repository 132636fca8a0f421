"""Bundled NumPy implementations (backend ``numpy``): vectorised, ``out=`` style.

These are what a careful NumPy user writes: ufuncs with ``out=``, slicing for
the stencils and halos, ``np.matmul``.  They are not the references: those
live in :mod:`reference_kernels`, return new arrays and accumulate floats in
float64, whereas these write into the caller's ``out`` and compute in the
input dtype, so the suites' tolerances are exercised for real.

NumPy has no user-visible threads and no shared memory, so the index-map
kernels and the shared-memory tiled ``matmul_tiled`` are not applicable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements, not_applicable

from ._applicability import INDEX_MAPS, not_applicable_on

BACKEND = "numpy"
NAME = "vectorised"


def _register(kernel: str) -> Any:
    return implements(kernel, backend=BACKEND, name=NAME, origin="bundled")


# -- elementwise ------------------------------------------------------------------------------


@_register("vector_add")
def vector_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a + b``."""
    np.add(a, b, out=out)


@_register("saxpy")
def saxpy(alpha: Any, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = alpha * x + y``, product and sum each rounded in ``out``'s dtype."""
    np.multiply(out.dtype.type(alpha), x, out=out)
    np.add(out, y, out=out)


@_register("sigmoid")
def sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    """``out = 1 / (1 + exp(-x))`` in ``x``'s dtype, built up in ``out`` (no temporaries)."""
    # exp(-x) overflows to inf for very negative x, and 1 / inf = 0 is the right limit.
    with np.errstate(over="ignore"):
        np.negative(x, out=out)
        np.exp(out, out=out)
    np.add(out, out.dtype.type(1), out=out)
    np.reciprocal(out, out=out)


@_register("add_one_2d")
def add_one_2d(a: np.ndarray) -> None:
    """``a += 1`` in place."""
    np.add(a, a.dtype.type(1), out=a)


# -- indexing ---------------------------------------------------------------------------------

not_applicable_on(INDEX_MAPS, [BACKEND],
                  "NumPy has no user-visible threads: an index map would only restate "
                   "np.arange, not test a thread-to-element mapping")


@_register("transpose")
def transpose(a: np.ndarray, out: np.ndarray) -> None:
    """``out = a.T`` (NumPy copies through the transposed view, any strides)."""
    out[...] = a.T


# -- reductions -------------------------------------------------------------------------------


@_register("sum")
def sum_(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = sum(x)``, NumPy's pairwise summation in ``x``'s dtype."""
    np.sum(x, dtype=out.dtype, keepdims=True, out=out)


@_register("dot")
def dot(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = x . y`` (BLAS for floats, NumPy's loop for integers)."""
    out[0] = np.dot(x, y)


@_register("max")
def max_(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = max(x)``."""
    np.max(x, keepdims=True, out=out)


@_register("weighted_sum")
def weighted_sum(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = w . x``."""
    out[0] = np.dot(w, x)


@_register("sum_of_squares")
def sum_of_squares(x: np.ndarray, out: np.ndarray) -> None:
    """``out[0] = x . x``."""
    out[0] = np.dot(x, x)


@_register("histogram")
def histogram(x: np.ndarray, out: np.ndarray) -> None:
    """``out[v] += count of v in x``: ``np.bincount`` adds every count at once; values
    outside ``[0, len(out))`` are not counted."""
    nbins = out.shape[0]
    inside = x[(x >= 0) & (x < nbins)]
    counts = np.bincount(inside.astype(np.intp, copy=False), minlength=nbins)
    np.add(out, counts.astype(out.dtype, copy=False), out=out)


@_register("monte_carlo_pi")
def monte_carlo_pi(seed: int, out: np.ndarray) -> None:
    """``out[i] = (u, v)`` from one seeded ``numpy.random.Generator`` stream.

    ``Generator.random`` draws float32 directly (24 random bits), so a sample
    is never rounded up to 1.0 as a float64 draw cast to float32 could be.
    """
    out[...] = np.random.default_rng(seed).random(out.shape, dtype=out.dtype)


# -- stencils ---------------------------------------------------------------------------------


def _heat_step_into(u: np.ndarray, alpha: Any, out: np.ndarray) -> None:
    """One heat step from ``u`` into ``out`` (a different array), walls held at 0."""
    if out.shape[0] == 0:
        return
    out[0] = 0
    out[-1] = 0
    if u.shape[0] > 2:
        t = out.dtype.type
        out[1:-1] = u[1:-1] + t(alpha) * (u[:-2] - t(2) * u[1:-1] + u[2:])


@_register("heat_step_1d")
def heat_step_1d(u: np.ndarray, alpha: Any, out: np.ndarray) -> None:
    """``out`` = one explicit heat step of ``u`` (every update reads the old ``u``)."""
    _heat_step_into(u, alpha, out)


@_register("heat_steps_1d")
def heat_steps_1d(u: np.ndarray, alpha: Any, steps: int, out: np.ndarray) -> None:
    """``steps`` heat steps, ping-ponging between two scratch arrays (``u`` is read only)."""
    current = np.array(u, dtype=out.dtype, copy=True)
    scratch = np.empty_like(current)
    for _ in range(int(steps)):
        _heat_step_into(current, alpha, scratch)
        current, scratch = scratch, current
    out[...] = current


@_register("laplacian_2d")
def laplacian_2d(u: np.ndarray, out: np.ndarray) -> None:
    """Five-point Laplacian on the interior of ``out``, 0 on its boundary."""
    out[...] = 0
    if u.shape[0] > 2 and u.shape[1] > 2:
        out[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                           - out.dtype.type(4) * u[1:-1, 1:-1])


# -- halos ------------------------------------------------------------------------------------


@_register("halo_exchange_1d")
def halo_exchange_1d(a: np.ndarray, width: int) -> None:
    """Periodic ghost cells in place: ``a[:w] = a[-2w:-w]``, ``a[-w:] = a[w:2w]``."""
    w = int(width)
    if w == 0:  # a[-0:] would be the whole array
        return
    a[:w] = a[-2 * w:-w]
    a[-w:] = a[w:2 * w]


@_register("halo_exchange_2d")
def halo_exchange_2d(a: np.ndarray, width: int) -> None:
    """Periodic ghosts on both axes: rows first, then whole columns (ghost rows included),
    which is what fills the corners."""
    w = int(width)
    if w == 0:
        return
    a[:w, :] = a[-2 * w:-w, :]
    a[-w:, :] = a[w:2 * w, :]
    a[:, :w] = a[:, -2 * w:-w]
    a[:, -w:] = a[:, w:2 * w]


# -- linalg -----------------------------------------------------------------------------------


@_register("matmul")
def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` with ``np.matmul`` (BLAS for floats)."""
    np.matmul(a, b, out=out)


not_applicable("matmul_tiled", BACKEND,
               "NumPy has no shared memory to tile into; np.matmul leaves blocking to BLAS")
