"""Hypothesis strategies for kernel inputs, layouts and launch configurations.

Sizes come from a fixed, bucketed set per backend, never from a free integer
range: JAX compiles once per distinct shape and dtype, so a bounded set of
shapes bounds the compilations of a test (at most ``len(sizes) * len(dtypes)``
per kernel, whatever the number of examples).  The sets hold the sizes that
break kernels: 0, 1, primes, block-size multiples and their neighbours.

Everything is sized per backend: the CUDA simulator runs one Python thread per
CUDA thread, so it gets tiny arrays, small blocks and fewer examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.typing import DTypeLike

from pytest_gpucheck.backends import BACKENDS, backend_class
from pytest_gpucheck.checking.device_views import slice_view, transpose_view
from pytest_gpucheck.checking.guards import guard_value
from pytest_gpucheck.checking.kernel_launch import LaunchConfig

#: Memory layouts an input can be handed to a kernel in.
CONTIGUOUS = "contiguous"
STRIDED = "strided"
TRANSPOSED = "transposed"
#: A contiguous view that starts one row (1-D: one element) into a bigger buffer whose first
#: row holds the guard sentinel: a kernel that reads from the buffer's start, not the view's,
#: reads the sentinel (the boundary sweep's offset view class).
OFFSET = "offset"


@dataclass(frozen=True)
class Sizing:
    """How big the drawn problems are on one backend."""

    #: 1-D lengths (0, 1, primes, multiples of 32 and their neighbours).
    sizes: tuple[int, ...]
    #: 2-D shapes ``(rows, cols)``: empty, single, mostly non-square both ways
    #: round, block-size neighbours.  A fixed list, so JAX compiles at most
    #: ``len(shapes_2d) * len(dtypes)`` times per test.
    shapes_2d: tuple[tuple[int, int], ...]
    #: 3-D shapes ``(nz, ny, nx)``.
    shapes_3d: tuple[tuple[int, int, int], ...]
    #: Matrix products ``(m, k, n)``, including empty inner and outer sizes.
    matmul_shapes: tuple[tuple[int, int, int], ...]
    #: Threads per block along x for 1-D launches.
    blocks: tuple[int, ...]
    #: Candidate block extents per axis for 2-D and 3-D launches.
    block_sides: tuple[int, ...]
    #: Threads per block allowed (1024 on current GPUs).
    max_threads: int
    #: Hypothesis examples are divided by this (the simulator is slow).
    example_divisor: int = 1
    #: ... and by this for statistical kernels (monte_carlo_pi), whose every example
    #: draws thousands of samples and runs its tests at a fixed false-alarm rate.
    statistical_divisor: int = 1
    #: Number of Monte Carlo samples (large enough for a statistical test).
    samples: tuple[int, ...] = (4096, 10007)
    #: The boundary sweep's block (a power of two) and its non-power-of-two partner.
    sweep_block: int = 32
    odd_block: int = 33
    #: The sweep's prime size: more than two sweep blocks, so a grid of two blocks
    #: has fewer threads than elements.
    sweep_prime: int = 67
    #: The sweep's 2-D and 3-D shapes (every axis distinct, except the single element)
    #: and matrix products (empty inner and outer sizes, every size distinct).
    sweep_shapes_2d: tuple[tuple[int, int], ...] = (
        (0, 3), (1, 1), (1, 33), (33, 1), (2, 3), (3, 2), (15, 17), (17, 33))
    sweep_shapes_3d: tuple[tuple[int, int, int], ...] = (
        (0, 2, 3), (1, 1, 1), (2, 3, 5), (5, 3, 2), (3, 5, 2), (4, 9, 17))
    sweep_matmul: tuple[tuple[int, int, int], ...] = (
        (0, 3, 2), (2, 0, 3), (1, 1, 1), (2, 3, 4), (4, 3, 2), (3, 5, 1), (1, 33, 2),
        (17, 9, 33))
    #: The repeat check's sizes (``conformance/harness.py``: one case run twice, and under
    #: two thread counts where the backend has a thread pool): large enough that a pool's
    #: threads overlap (a prange loop that races into ``out[0]`` lost updates in 50 of 50
    #: runs at 2**14 elements on 2 loaded cores, in none at 1031), odd so a chunk is partial.
    repeat_size: int = 65537
    repeat_shape_2d: tuple[int, int] = (256, 257)
    repeat_shape_3d: tuple[int, int, int] = (32, 41, 50)
    repeat_matmul: tuple[int, int, int] = (48, 33, 40)

    @property
    def sweep_sizes(self) -> tuple[int, ...]:
        """0, 1, 2, block - 1, block, block + 1 and a prime above two blocks."""
        b = self.sweep_block
        return (0, 1, 2, b - 1, b, b + 1, self.sweep_prime)


#: CPU backends and real GPUs: the device limit is 1024 threads per block.
FULL = Sizing(
    sizes=(0, 1, 2, 3, 7, 31, 32, 33, 127, 256, 1000, 1031),
    shapes_2d=((0, 0), (0, 5), (1, 1), (1, 33), (2, 3), (3, 2), (7, 16), (16, 7), (16, 16),
               (17, 33), (33, 17), (33, 1)),
    shapes_3d=((0, 1, 1), (1, 1, 1), (1, 2, 3), (3, 2, 1), (2, 5, 9), (9, 5, 2), (4, 4, 4),
               (5, 9, 3)),
    matmul_shapes=((0, 3, 2), (1, 1, 1), (2, 3, 4), (3, 2, 1), (5, 7, 3), (7, 16, 5),
                   (16, 16, 16), (17, 33, 9), (33, 17, 2), (1, 33, 1), (33, 1, 33), (4, 0, 3)),
    blocks=(1, 32, 33, 96, 128, 256, 1024),
    block_sides=(1, 2, 3, 8, 16, 32),
    max_threads=1024,
)

#: The CUDA simulator: one Python thread per CUDA thread, so tiny everything.
SIMULATOR = Sizing(
    sizes=(0, 1, 2, 3, 5, 7, 13, 31, 33),
    shapes_2d=((0, 0), (0, 3), (1, 1), (1, 7), (2, 3), (3, 2), (5, 7), (7, 5), (4, 4)),
    shapes_3d=((0, 1, 1), (1, 1, 1), (1, 2, 3), (3, 2, 1), (2, 3, 2)),
    matmul_shapes=((0, 2, 1), (1, 1, 1), (2, 3, 4), (3, 2, 1), (5, 7, 3), (4, 4, 4),
                   (7, 5, 2), (3, 0, 2)),
    blocks=(1, 2, 3, 5, 8, 32),
    block_sides=(1, 2, 3, 4),
    max_threads=32,
    # Half the examples (a quarter starved it: 2 per test on the dev profile), on top
    # of the boundary sweep that every backend runs in full.
    example_divisor=2,
    statistical_divisor=4,
    samples=(1031, 2048),
    sweep_block=8,
    odd_block=3,
    sweep_prime=19,
    sweep_shapes_2d=((0, 3), (1, 1), (1, 9), (9, 1), (2, 3), (3, 2), (5, 7), (7, 9)),
    sweep_shapes_3d=((0, 2, 3), (1, 1, 1), (2, 3, 5), (5, 3, 2), (3, 5, 2)),
    sweep_matmul=((0, 3, 2), (2, 0, 3), (1, 1, 1), (2, 3, 4), (4, 3, 2), (3, 5, 1), (5, 9, 3),
                  (7, 2, 9)),
    # Two blocks of 32 threads and a partial third: the block's Python threads interleave.
    repeat_size=67,
    repeat_shape_2d=(9, 11),
    repeat_shape_3d=(3, 5, 7),
    repeat_matmul=(5, 9, 7),
)


def sizing_for(backend_name: str) -> Sizing:
    """The :class:`Sizing` of a backend (the simulator is the only small one)."""
    simulated = backend_name in BACKENDS and backend_class(backend_name).is_simulator
    return SIMULATOR if simulated else FULL


# -- sizes and shapes ---------------------------------------------------------------------


def sizes(sizing: Sizing, *, min_size: int = 0) -> st.SearchStrategy[int]:
    """A 1-D length from the backend's bucket, at least ``min_size``."""
    return st.sampled_from([n for n in sizing.sizes if n >= min_size])


def shapes_2d(sizing: Sizing, *, min_side: int = 0) -> st.SearchStrategy[tuple[int, int]]:
    """``(rows, cols)`` from the backend's 2-D bucket, both at least ``min_side``."""
    return st.sampled_from([s for s in sizing.shapes_2d if min(s) >= min_side])


def shapes_3d(sizing: Sizing) -> st.SearchStrategy[tuple[int, int, int]]:
    """``(nz, ny, nx)`` from the backend's 3-D bucket."""
    return st.sampled_from(sizing.shapes_3d)


def matmul_shapes(sizing: Sizing) -> st.SearchStrategy[tuple[int, int, int]]:
    """``(m, k, n)`` of ``(m, k) @ (k, n)`` from the backend's bucket."""
    return st.sampled_from(sizing.matmul_shapes)


def dtypes(*names: str) -> st.SearchStrategy[np.dtype]:
    """One of the named NumPy dtypes."""
    return st.sampled_from([np.dtype(name) for name in names])


# -- values -------------------------------------------------------------------------------
#
# Element strategies yield plain Python numbers (no ``.map``): hypothesis.extra.numpy
# converts them to the array's dtype, checks the conversion is exact, and can then
# fill most of a large array with one drawn value, which keeps generating and
# shrinking 1000-element arrays fast.


def integer_valued(dtype: DTypeLike, low: int, high: int) -> st.SearchStrategy[int]:
    """Integers in ``[low, high]``, for arrays of ``dtype`` (integer or float).

    Integer-valued floats make reductions exact in any order (see
    :mod:`pytest_gpucheck.checking.tolerance`), so a dropped element cannot hide.
    """
    del dtype  # the array's dtype does the conversion
    return st.integers(low, high)


def nonzero_integer_valued(dtype: DTypeLike, bound: int) -> st.SearchStrategy[int]:
    """Integers in ``[-bound, bound]`` except 0: every element changes a sum."""
    positive = st.integers(1, bound)
    if np.dtype(dtype).kind == "u":
        return positive
    return positive | st.integers(-bound, -1)


def scalars(dtype: DTypeLike, elements: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A NumPy scalar of ``dtype`` (what the contract passes for ``alpha``)."""
    return elements.map(np.dtype(dtype).type)


def finite_floats(dtype: DTypeLike, bound: float) -> st.SearchStrategy[Any]:
    """Finite floats of ``dtype`` in ``[-bound, bound]``, subnormals excluded.

    Subnormals are excluded because GPUs may flush them to zero; the
    elementwise rules would have to accept anything near zero otherwise.
    """
    dtype = np.dtype(dtype)
    # hypothesis wants bounds representable in the width
    bound = float(np.asarray(bound).astype(dtype))
    width: Literal[16, 32, 64] = {2: 16, 4: 32}.get(dtype.itemsize, 64)  # type: ignore[assignment]
    return st.floats(-bound, bound, width=width, allow_subnormal=False,
                     allow_nan=False, allow_infinity=False)


def arrays(dtype: DTypeLike, shape: int | tuple[int, ...],
           elements: st.SearchStrategy[Any], *, unique: bool = False) -> st.SearchStrategy[Any]:
    """Host arrays from :func:`hypothesis.extra.numpy.arrays` with the given elements."""
    return hnp.arrays(np.dtype(dtype), shape, elements=elements, unique=unique)


def distinct_values(dtype: DTypeLike, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    """A permutation of ``1..size`` in ``shape``: every element is distinguishable, so a
    value read from the wrong place is always visible (transpose, halos).

    The permutation comes from a drawn seed rather than from per-element draws:
    the values themselves are not what a shrinker should minimise.
    """
    size = int(np.prod(shape, dtype=np.int64))

    def build(seed: int) -> np.ndarray:
        values = np.random.default_rng(seed).permutation(size) + 1
        return values.astype(dtype).reshape(shape)

    return st.integers(0, 2**32 - 1).map(build)


# -- layouts ------------------------------------------------------------------------------


def layouts(ndim: int) -> st.SearchStrategy[str]:
    """Contiguous, strided, or (2-D) transposed."""
    options = [CONTIGUOUS, STRIDED] + ([TRANSPOSED] if ndim == 2 else [])
    return st.sampled_from(options)


@dataclass
class DeviceInput:
    """An input on the device in a given layout, and what to compare it with afterwards."""

    view: Any
    #: The whole device buffer the view lives in (a kernel may not write any of it).
    parent: Any
    #: The host copy of ``parent`` taken before the launch.
    parent_before: np.ndarray
    layout: str


def to_device_with_layout(backend: Any, host: np.ndarray, layout: str) -> DeviceInput:
    """Put ``host`` on ``backend``'s device as a view of the requested layout.

    ``strided``: every other element (every third column) of a bigger buffer
    whose gaps hold the guard sentinel, so a kernel that ignores the strides
    reads NaN payloads or 0x5A... and fails the value check.  ``transposed``:
    the transpose of a C-contiguous array holding ``host.T`` (an F-order view).
    """
    if layout == CONTIGUOUS:
        parent_host = np.ascontiguousarray(host)
        parent = backend.to_device(parent_host)
        return DeviceInput(parent, parent, parent_host, layout)
    if layout == STRIDED:
        steps = (2,) if host.ndim == 1 else (2,) * (host.ndim - 1) + (3,)
        padded = tuple(n * step + 1 for n, step in zip(host.shape, steps, strict=True))
        parent_host = np.empty(padded, dtype=host.dtype)
        parent_host[...] = guard_value(host.dtype)
        index = tuple(
            slice(1, 1 + n * step, step) for n, step in zip(host.shape, steps, strict=True)
        )
        parent_host[index] = host
        parent = backend.to_device(parent_host)
        return DeviceInput(slice_view(parent, index), parent, parent_host, layout)
    if layout == OFFSET:
        parent_host = np.empty((host.shape[0] + 1, *host.shape[1:]), dtype=host.dtype)
        parent_host[...] = guard_value(host.dtype)
        parent_host[1:] = host
        parent = backend.to_device(parent_host)
        index = (slice(1, 1 + host.shape[0], 1), *(slice(0, n, 1) for n in host.shape[1:]))
        return DeviceInput(slice_view(parent, index), parent, parent_host, layout)
    if layout == TRANSPOSED:
        if host.ndim != 2:
            raise ValueError("the transposed layout is for 2-D inputs")
        parent_host = np.ascontiguousarray(host.T)
        parent = backend.to_device(parent_host)
        return DeviceInput(transpose_view(parent), parent, parent_host, layout)
    raise ValueError(f"unknown layout {layout!r}")


# -- launch configurations ----------------------------------------------------------------


def launch_1d(sizing: Sizing, n: int, *, grid_stride: bool = False) -> st.SearchStrategy[
        LaunchConfig]:
    """A 1-D launch for ``n`` elements.

    Normally the grid covers all ``n`` elements, sometimes with one extra
    block, so threads past the end exist whenever ``n`` is not a multiple of
    the block (a missing bounds check writes into the guard band).  With
    ``grid_stride`` the grid has *fewer* threads than elements (whenever
    ``n >= 2``), which only a grid-stride loop handles.
    """
    if grid_stride:
        blocks = [b for b in sizing.blocks if b < n] or [1]

        def stride_grid(block: int) -> st.SearchStrategy[LaunchConfig]:
            most = max(1, math.ceil(n / block) - 1)
            return st.integers(1, most).map(lambda g: LaunchConfig((g,), (block,)))

        return st.sampled_from(blocks).flatmap(stride_grid)

    def covering(block: int) -> st.SearchStrategy[LaunchConfig]:
        needed = max(1, math.ceil(n / block))
        return st.integers(needed, needed + 1).map(lambda g: LaunchConfig((g,), (block,)))

    return st.sampled_from(sizing.blocks).flatmap(covering)


def _block_shapes(sizing: Sizing, ndim: int, *, square: bool) -> st.SearchStrategy[
        tuple[int, ...]]:
    fits = [s for s in sizing.block_sides if s**ndim <= sizing.max_threads]
    if square:
        return st.sampled_from(fits).map(lambda s: (s,) * ndim)
    side = st.sampled_from(sizing.block_sides)
    return st.tuples(*([side] * ndim)).filter(
        lambda block: math.prod(block) <= sizing.max_threads
    )


def launch_nd(sizing: Sizing, shape: tuple[int, ...], *,
              square: bool = False) -> st.SearchStrategy[LaunchConfig]:
    """A 2-D or 3-D launch covering ``shape`` (C order), in CUDA order (x = last axis).

    Blocks are often non-square and grids sometimes carry an extra block per
    axis, so threads outside the array exist and x/y mix-ups show.  ``square``
    draws square blocks only (classic shared-memory tiles).
    """
    extents = tuple(reversed(shape))  # x first

    def covering(block: tuple[int, ...]) -> st.SearchStrategy[LaunchConfig]:
        needed = [max(1, math.ceil(e / b)) for e, b in zip(extents, block, strict=True)]
        grids = st.tuples(*[st.integers(g, g + 1) for g in needed])
        return grids.map(lambda grid: LaunchConfig(tuple(grid), block))

    return _block_shapes(sizing, len(shape), square=square).flatmap(covering)


def sweep_launches(sizing: Sizing, domain: tuple[int, ...], *, grid_stride: bool = False,
                   square: bool = False) -> list[LaunchConfig]:
    """The launches of the boundary sweep over ``domain`` (C order): every case runs
    under each, and kernels whose result cannot depend on the launch must agree.

    1-D: the power-of-two block with one spare block (threads past the end), and
    the non-power-of-two block covering exactly.  Grid-stride: one block of the odd
    size, and two power-of-two blocks (smaller ones for small domains); both have
    fewer threads than elements.  2-D/3-D: a non-square block of distinct odd
    sides with a spare block per axis, and a flat ``(block, 1)`` one; square blocks
    (tiles) of two sizes for ``square``.
    """
    b, odd = sizing.sweep_block, sizing.odd_block
    if len(domain) == 1:
        n = domain[0]
        if grid_stride:  # fewer threads than elements whenever n >= 2 (the contract)
            one = odd if n > odd else max(1, n - 1)
            two = b if n > 2 * b else max(1, (n - 1) // 2)
            return [LaunchConfig((1,), (one,)), LaunchConfig((2 if n >= 3 else 1,), (two,))]
        return [LaunchConfig((max(1, math.ceil(n / b)) + 1,), (b,)),
                LaunchConfig((max(1, math.ceil(n / odd)),), (odd,))]
    extents = tuple(reversed(domain))  # x first
    if square:
        sides = [s for s in sizing.block_sides if s > 1 and s ** len(domain) <= sizing.max_threads]
        blocks = [(sides[0],) * len(domain), (sides[-1],) * len(domain)]
    elif len(domain) == 2:
        blocks = [(3, 2), (min(b, sizing.max_threads), 1)]
    else:
        blocks = [(3, 2, 1), (2, 1, 3)]
    launches = []
    for index, block in enumerate(blocks):
        spare = 1 if index == 0 else 0
        grid = tuple(max(1, math.ceil(e / s)) + spare for e, s in zip(extents, block, strict=True))
        launches.append(LaunchConfig(grid, tuple(block)))
    return launches


__all__ = [
    "CONTIGUOUS",
    "FULL",
    "OFFSET",
    "SIMULATOR",
    "STRIDED",
    "TRANSPOSED",
    "DeviceInput",
    "Sizing",
    "arrays",
    "distinct_values",
    "dtypes",
    "finite_floats",
    "integer_valued",
    "launch_1d",
    "launch_nd",
    "layouts",
    "matmul_shapes",
    "nonzero_integer_valued",
    "shapes_2d",
    "shapes_3d",
    "sizes",
    "sizing_for",
    "sweep_launches",
    "to_device_with_layout",
]
