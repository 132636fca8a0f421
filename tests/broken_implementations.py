"""Deliberately broken (and matching correct) kernel implementations.

``tests/conformance/test_conformance_rejects_broken.py`` loads this module as a plugin
(``PYTEST_PLUGINS=broken_implementations``, the way a ``conftest.py`` would
register them) and runs the bundled suites with ``--gpu-conformance
--gpu-impls=user``: every ``broken_*`` implementation must
fail with the message of the check that exists to catch it, and every
``good_*`` one must pass.  Each bug is one a real kernel author makes.

Numba kernels are built inside cached factories, so loading this conftest
imports no framework; the ``numba-cudasim`` ones run in the simulator child.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements


# -- numpy: guard bands, inputs, dtype, shape, tolerance ----------------------------------------
@implements("vector_add", backend="numpy", name="good")
def good_vector_add(a: Any, b: Any, out: Any) -> None:
    out[...] = a + b


@implements("vector_add", backend="numpy", name="broken_past_end")
def broken_vector_add_past_end(a: Any, b: Any, out: Any) -> None:
    """Writes one element past the end of ``out`` through the underlying buffer (what
    a GPU kernel without a bounds check does; only the guard band can see it)."""
    out[...] = a + b
    past = np.lib.stride_tricks.as_strided(out, shape=(out.shape[0] + 1,), strides=out.strides)
    past[-1] = 0


@implements("vector_add", backend="numpy", name="broken_writes_input")
def broken_vector_add_writes_input(a: Any, b: Any, out: Any) -> None:
    """Accumulates into its input ``a``."""
    a += b
    out[...] = a


@implements("vector_add", backend="numpy", name="broken_dtype")
def broken_vector_add_dtype(a: Any, b: Any) -> Any:
    """Returns float64 whatever the inputs are."""
    return (a + b).astype(np.float64)


@implements("sum", backend="numpy", name="broken_shape")
def broken_sum_shape(x: Any) -> Any:
    """Returns a 0-d array instead of the contract's shape (1,)."""
    return np.asarray(np.sum(x, dtype=x.dtype))


@implements("sum", backend="numpy", name="broken_float32_accumulator")
def broken_sum_float32_accumulator(x: Any, out: Any) -> None:
    """Accumulates float64 data in float32: beyond Higham's float64 bound."""
    out[0] = np.sum(x.astype(np.float32), dtype=np.float32)


@implements("sum", backend="numpy", name="good")
def good_sum(x: Any, out: Any) -> None:
    out[0] = np.sum(x, dtype=x.dtype)


@implements("sum", backend="numpy", name="broken_drops_nan")
def broken_sum_drops_nan(x: Any, out: Any) -> None:
    """Skips NaN (as ``np.nansum`` does), where IEEE makes the sum NaN."""
    out[0] = np.nansum(x, dtype=x.dtype)


@implements("histogram", backend="numpy", name="good")
def good_histogram(x: Any, out: Any) -> None:
    nbins = out.shape[0]
    np.add.at(out, x[(x >= 0) & (x < nbins)].astype(np.intp), 1)


@implements("histogram", backend="numpy", name="broken_clamps")
def broken_histogram_clamps(x: Any, out: Any) -> None:
    """Clamps values outside the bins into the edge bins instead of leaving them out."""
    np.add.at(out, np.clip(x, 0, out.shape[0] - 1).astype(np.intp), 1)


@implements("sigmoid", backend="numpy", name="good")
def good_sigmoid(x: Any, out: Any) -> None:
    with np.errstate(over="ignore"):
        out[...] = 1 / (1 + np.exp(-x))


@implements("sigmoid", backend="numpy", name="broken_half_precision")
def broken_sigmoid_half_precision(x: Any, out: Any) -> None:
    """Evaluates exp in float16: far more than 4 ULP off."""
    with np.errstate(over="ignore"):
        out[...] = 1 / (1 + np.exp(-x.astype(np.float16)).astype(x.dtype))


@implements("monte_carlo_pi", backend="numpy", name="good")
def good_monte_carlo_numpy(seed: int, out: Any) -> None:
    out[...] = np.random.default_rng(seed).random(out.shape, dtype=np.float64)


@implements("monte_carlo_pi", backend="numpy", name="broken_biased")
def broken_monte_carlo_biased(seed: int, out: Any) -> None:
    """Scales the samples into [0, 0.9)^2: never near the far corner."""
    out[...] = np.random.default_rng(seed).random(out.shape, dtype=np.float64) * 0.9


@implements("monte_carlo_pi", backend="numpy", name="broken_15_bit")
def broken_monte_carlo_15_bit(seed: int, out: Any) -> None:
    """Draws from a 15-bit generator (as C's ``rand()``): a good estimate of pi, but every
    sample lies on a grid of 2^-15."""
    out[...] = np.random.default_rng(seed).integers(0, 2**15, out.shape) / 2.0**15


# Samples that are not independent: each passes pi, the bins, the resolution and the 4 x 4
# pairings; the independence tests (serial correlation, overlapping pairs) reject them.
@implements("monte_carlo_pi", backend="numpy", name="broken_reused_seed")
def broken_monte_carlo_reused_seed(seed: int, out: Any) -> None:
    """Sample ``i`` takes draws ``i`` and ``i + 1`` of one stream (a counter reused by the
    next sample, as when each sample seeds with ``seed + i`` a generator whose key is an
    offset): successive samples share a random number, ``v[i] == u[i+1]``."""
    x = np.random.default_rng(seed).random(out.shape[0] + 1)
    out[:, 0] = x[:-1]
    out[:, 1] = x[1:]


@implements("monte_carlo_pi", backend="numpy", name="broken_offset_streams")
def broken_monte_carlo_offset_streams(seed: int, out: Any) -> None:
    """Two workers, each filling half of ``out``, skip ahead in one stream by their index (one
    draw) instead of by their share of it: the second half repeats the first, shifted."""
    n = out.shape[0]
    base = np.random.default_rng(seed).random(2 * n + 1)
    half = n // 2
    out[:half] = base[: 2 * half].reshape(-1, 2)
    out[half:] = base[1 : 1 + 2 * (n - half)].reshape(-1, 2)


@implements("monte_carlo_pi", backend="numpy", name="broken_short_period")
def broken_monte_carlo_short_period(seed: int, out: Any) -> None:
    """Cycles through a table of 4099 random numbers (a generator of period 4099), fewer
    than the 2n draws the suite asks for."""
    table = np.random.default_rng(seed).random(4099)
    out[...] = np.resize(table, out.size).reshape(out.shape)

# -- numpy: heat steps and halos -----------------------------------------------------------------
@implements("heat_step_1d", backend="numpy", name="good")
def good_heat_step(u: Any, alpha: Any, out: Any) -> None:
    out[...] = 0
    if u.shape[0] > 2:
        out[1:-1] = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])


@implements("heat_step_1d", backend="numpy", name="broken_in_place")
def broken_heat_step_in_place(u: Any, alpha: Any, out: Any) -> None:
    """Updates ``u`` element by element, so each update reads an already updated left
    neighbour, and the input is destroyed."""
    for i in range(1, u.shape[0] - 1):
        u[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1])
    out[...] = u
    if u.shape[0]:
        out[0] = out[-1] = 0


@implements("halo_exchange_1d", backend="numpy", name="good")
def good_halo_1d(a: Any, width: int) -> None:
    w = width
    if w:
        a[:w] = a[-2 * w:-w]
        a[-w:] = a[w:2 * w]


@implements("halo_exchange_1d", backend="numpy", name="broken_wrong_neighbour")
def broken_halo_1d_wrong_neighbour(a: Any, width: int) -> None:
    """Fills each ghost region from its own side of the interior, not the opposite one."""
    w = width
    if w:
        a[:w] = a[w:2 * w]
        a[-w:] = a[-2 * w:-w]


@implements("halo_exchange_2d", backend="numpy", name="good")
def good_halo_2d(a: Any, width: int) -> None:
    w = width
    if w:
        a[:w, :] = a[-2 * w:-w, :]
        a[-w:, :] = a[w:2 * w, :]
        a[:, :w] = a[:, -2 * w:-w]
        a[:, -w:] = a[:, w:2 * w]


@implements("halo_exchange_2d", backend="numpy", name="broken_no_corners")
def broken_halo_2d_no_corners(a: Any, width: int) -> None:
    """Exchanges edges over the interior only, so the four corner blocks stay stale."""
    w = width
    if w:
        a[:w, w:-w] = a[-2 * w:-w, w:-w]
        a[-w:, w:-w] = a[w:2 * w, w:-w]
        a[w:-w, :w] = a[w:-w, -2 * w:-w]
        a[w:-w, -w:] = a[w:-w, w:2 * w]


# -- numba-cpu: a grid emulated on the CPU, and a chunked reduction ------------------------------
@functools.cache
def _numba_cpu() -> Any:
    from numba import njit

    @njit(cache=False)
    def store_indices(flat: Any, count: int) -> None:
        for i in range(count):
            flat[i] = i

    @njit(cache=False)
    def chunked_sum(x: Any, chunk: int, overlap: int) -> Any:
        total = np.zeros(1, dtype=x.dtype)
        for start in range(0, x.shape[0], chunk):
            stop = min(start + chunk + overlap, x.shape[0])
            for i in range(start, stop):
                total[0] += x[i]
        return total[0]

    return store_indices, chunked_sum


@implements("index_map_1d", backend="numba-cpu", name="good")
def good_index_map_cpu(out: Any, launch: Any) -> None:
    store_indices, _ = _numba_cpu()
    threads = launch.grid[0] * launch.block[0]
    store_indices(out, min(threads, out.shape[0]))


@implements("index_map_1d", backend="numba-cpu", name="broken_bounds_off_by_one")
def broken_index_map_cpu_bounds(out: Any, launch: Any) -> None:
    """Emulates ``if i <= n`` instead of ``if i < n``: the thread just past the end
    stores into the memory after ``out`` (on a GPU nothing else would notice)."""
    store_indices, _ = _numba_cpu()
    threads = launch.grid[0] * launch.block[0]
    count = min(threads, out.shape[0] + 1)
    flat = np.lib.stride_tricks.as_strided(out, shape=(count,), strides=out.strides)
    store_indices(flat, count)


@implements("sum", backend="numba-cpu", name="good")
def good_sum_cpu(x: Any, out: Any) -> None:
    _, chunked_sum = _numba_cpu()
    out[0] = chunked_sum(x, 32, 0)


@implements("sum", backend="numba-cpu", name="broken_counts_twice")
def broken_sum_cpu_twice(x: Any, out: Any) -> None:
    """Chunks of 32 that overlap by one: the first element of every later chunk is
    added twice."""
    _, chunked_sum = _numba_cpu()
    out[0] = chunked_sum(x, 32, 1)


# -- numba-cpu: a data race between threads, and its correct twin --------------------------------
@functools.cache
def _numba_parallel() -> Any:
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def racy_sum(x: Any, out: Any) -> None:
        for i in prange(x.shape[0]):
            out[0] += x[i]  # every thread reads, adds and writes out[0]: updates are lost

    @njit(parallel=True, cache=False)
    def reduced_sum(x: Any, out: Any) -> None:
        acc = out[0]
        for i in prange(x.shape[0]):
            acc += x[i]  # a prange reduction: each thread sums privately, combined once
        out[0] = acc

    return racy_sum, reduced_sum


@implements("sum", backend="numba-cpu", name="broken_race")
def broken_sum_cpu_race(x: Any, out: Any) -> None:
    """A ``prange`` loop that accumulates into ``out[0]``: threads race on it."""
    _numba_parallel()[0](x, out)


@implements("sum", backend="numba-cpu", name="good_parallel")
def good_sum_cpu_parallel(x: Any, out: Any) -> None:
    """The same loop as a ``prange`` reduction."""
    _numba_parallel()[1](x, out)


# -- numba-cudasim: real @cuda.jit kernels on the simulator ------------------------------------
@functools.cache
def _cuda_kernels() -> Any:
    import broken_cuda_kernels

    return broken_cuda_kernels


def _launch(kernel: str, launch: Any, *args: Any) -> None:
    getattr(_cuda_kernels(), kernel)[launch.grid, launch.block](*args)


@implements("index_map_1d", backend="numba-cudasim", name="good")
def good_index_map_1d(out: Any, launch: Any) -> None:
    _launch("index_1d_checked", launch, out)


@implements("index_map_1d", backend="numba-cudasim", name="broken_no_bounds_check")
def broken_index_map_1d_unchecked(out: Any, launch: Any) -> None:
    _launch("index_1d_unchecked", launch, out)


@implements("index_map_2d", backend="numba-cudasim", name="good")
def good_index_map_2d(out: Any, launch: Any) -> None:
    _launch("index_2d", launch, out)


@implements("index_map_2d", backend="numba-cudasim", name="broken_off_by_one")
def broken_index_map_2d_off_by_one(out: Any, launch: Any) -> None:
    _launch("index_2d_off_by_one", launch, out)


@implements("index_map_2d", backend="numba-cudasim", name="broken_xy_swapped")
def broken_index_map_2d_swapped(out: Any, launch: Any) -> None:
    _launch("index_2d_swapped", launch, out)


@implements("index_map_grid_stride", backend="numba-cudasim", name="good")
def good_grid_stride(out: Any, launch: Any) -> None:
    _launch("grid_stride", launch, out)


@implements("index_map_grid_stride", backend="numba-cudasim", name="broken_skips_tail")
def broken_grid_stride_tail(out: Any, launch: Any) -> None:
    _launch("grid_stride_no_tail", launch, out)


@implements("sum", backend="numba-cudasim", name="good")
def good_sum_cuda(x: Any, out: Any, launch: Any) -> None:
    _launch("atomic_sum", launch, x, out)


@implements("sum", backend="numba-cudasim", name="broken_drops_last_block")
def broken_sum_cuda_partial_block(x: Any, out: Any, launch: Any) -> None:
    _launch("atomic_sum_full_blocks", launch, x, out)


_MC_THREADS = 64


@implements("monte_carlo_pi", backend="numba-cudasim", name="good")
def good_monte_carlo(seed: int, out: Any) -> None:
    from numba.cuda.random import create_xoroshiro128p_states

    states = create_xoroshiro128p_states(_MC_THREADS, seed=seed)
    _cuda_kernels().uniform_pairs[_MC_THREADS // 32, 32](states, out)


@implements("monte_carlo_pi", backend="numba-cudasim", name="broken_shared_seed")
def broken_monte_carlo_shared_seed(seed: int, out: Any) -> None:
    """Every thread's generator starts from the same state: the streams coincide."""
    from numba import cuda
    from numba.cuda.random import create_xoroshiro128p_states

    one = create_xoroshiro128p_states(1, seed=seed).copy_to_host()
    states = cuda.to_device(np.repeat(one, _MC_THREADS))
    _cuda_kernels().uniform_pairs[_MC_THREADS // 32, 32](states, out)


# -- escape classes: each met by the boundary sweep on the ci profile --------------------------
#
# Each bug below escaped the random search on the backend it is registered for
# (the simulator got 2 examples; edge sizes, odd blocks, distinct axes, wide
# ghosts, NaN inputs and small grids were rarely drawn).  Each has a correct twin.

@implements("vector_add", backend="numpy", name="broken_accumulates")
def broken_vector_add_accumulates(a: Any, b: Any, out: Any) -> None:
    """Adds into ``out`` as if it started at zero (it starts uninitialised)."""
    out[...] += a + b


@implements("vector_add", backend="numpy", name="broken_everything_at_once")
def broken_vector_add_everything(a: Any, b: Any, out: Any) -> None:
    """Writes its input and past the end of ``out``: both checks are listed."""
    if out.shape[0]:
        a[...] = 0
        out[...] = b
        past = np.lib.stride_tricks.as_strided(out, shape=(out.shape[0] + 1,),
                                               strides=out.strides)
        past[-1] = 0


@implements("matmul", backend="numpy", name="good")
def good_matmul_loops(a: Any, b: Any, out: Any) -> None:
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = a.dtype.type(0)
            for p in range(a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


@implements("matmul", backend="numpy", name="broken_empty_inner")
def broken_matmul_empty_inner(a: Any, b: Any, out: Any) -> None:
    """Seeds each dot product with the first term: wrong when the inner size is 0."""
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = a[i, 0] * b[0, j]
            for p in range(1, a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


@implements("halo_exchange_1d", backend="numpy", name="broken_wide_ghosts")
def broken_halo_1d_wide(a: Any, width: int) -> None:
    """Takes the left ghosts from the cells just inside the right ghosts: the same
    cells when the ghosts are one wide, the wrong ones when wider."""
    w = width
    if w:
        a[:w] = a[-w - 1:-1]
        a[-w:] = a[w:2 * w]


@functools.cache
def _numba_cpu_escapes() -> Any:
    from numba import njit

    @njit(cache=False)
    def max_from_zero(x: Any) -> Any:
        best = x.dtype.type(0)
        for v in x:
            best = max(best, v)
        return best

    @njit(cache=False)
    def max_from_first(x: Any) -> Any:
        best = x[0]
        for v in x[1:]:
            if v > best or v != v:  # NaN propagates, as in np.max (the contract)
                best = v
        return best

    @njit(cache=False)
    def max_running(x: Any, from_lowest: bool) -> Any:
        # The running maximum a kernel author writes: `if x[i] > m: m = x[i]`.  A NaN
        # compares false, so it is dropped wherever it is, unless it starts the maximum.
        best = -np.inf if from_lowest else x[0]
        for v in x:
            if v > best:
                best = v
        return best

    @njit(cache=False)
    def sigmoid_saturating(x: Any, out: Any, nan_safe: bool) -> None:
        for i in range(x.shape[0]):
            v = x[i]
            if nan_safe and v != v:
                out[i] = v
            elif -745.0 <= v <= 40.0:
                out[i] = 1.0 / (1.0 + np.exp(-v))
            else:  # saturated (exactly, in float64); a NaN lands here and becomes 1
                out[i] = 0.0 if v < 0 else 1.0

    return max_from_zero, max_from_first, sigmoid_saturating, max_running


@implements("max", backend="numba-cpu", name="good")
def good_max_cpu(x: Any, out: Any) -> None:
    out[0] = _numba_cpu_escapes()[1](x)


@implements("max", backend="numba-cpu", name="broken_starts_at_zero")
def broken_max_cpu_zero(x: Any, out: Any) -> None:
    """Starts the running maximum at 0: wrong when every element is negative."""
    out[0] = _numba_cpu_escapes()[0](x)


@implements("max", backend="numba-cpu", name="broken_drops_nan")
def broken_max_cpu_drops_nan(x: Any, out: Any) -> None:
    """A running maximum from -inf with `if x[i] > m`: drops every NaN (np.max propagates)."""
    out[0] = _numba_cpu_escapes()[3](x, True)


@implements("max", backend="numba-cpu", name="broken_drops_later_nan")
def broken_max_cpu_drops_later_nan(x: Any, out: Any) -> None:
    """The running maximum of issue 41, from x[0]: a NaN first is kept, a later one dropped."""
    out[0] = _numba_cpu_escapes()[3](x, False)


@implements("sigmoid", backend="numba-cpu", name="good")
def good_sigmoid_cpu(x: Any, out: Any) -> None:
    _numba_cpu_escapes()[2](x, out, True)


@implements("sigmoid", backend="numba-cpu", name="broken_nan_saturates")
def broken_sigmoid_cpu_nan(x: Any, out: Any) -> None:
    """Saturates outside [-745, 40] by comparison, so NaN (which compares false
    everywhere) comes out as 1 instead of NaN."""
    _numba_cpu_escapes()[2](x, out, False)


@implements("index_map_grid_stride", backend="numba-cudasim", name="broken_block_start")
def broken_grid_stride_block_start(out: Any, launch: Any) -> None:
    _launch("grid_stride_block_start", launch, out)


@implements("index_map_3d", backend="numba-cudasim", name="good")
def good_index_map_3d(out: Any, launch: Any) -> None:
    _launch("index_3d", launch, out)


@implements("index_map_3d", backend="numba-cudasim", name="broken_zx_swapped")
def broken_index_map_3d_swapped(out: Any, launch: Any) -> None:
    _launch("index_3d_zx_swapped", launch, out)


def _tree_sum(x: Any, out: Any, launch: Any, halving: int) -> None:
    from numba import cuda

    integer = np.dtype(out.dtype).kind == "i"
    partials = cuda.device_array(launch.grid[0], dtype=np.int64 if integer else np.float64)
    _launch("block_partial_sums_int" if integer else "block_partial_sums", launch, x, partials,
            halving)
    total = partials.copy_to_host().sum(dtype=np.int64 if integer else np.float64)
    out.copy_to_device(np.array([total]).astype(out.dtype))


@implements("sum", backend="numba-cudasim", name="good_tree")
def good_tree_sum(x: Any, out: Any, launch: Any) -> None:
    _tree_sum(x, out, launch, 0)


@implements("sum", backend="numba-cudasim", name="broken_power_of_two_tree")
def broken_tree_sum(x: Any, out: Any, launch: Any) -> None:
    """Halves the active threads each step: drops an element whenever the block size
    is not a power of two."""
    _tree_sum(x, out, launch, 1)


@implements("matmul", backend="numba-cudasim", name="good")
def good_matmul_cuda(a: Any, b: Any, out: Any, launch: Any) -> None:
    _launch("matmul_rows", launch, a, b, out, 0, np.dtype(out.dtype).type(0))


@implements("matmul", backend="numba-cudasim", name="broken_launch_dependent_order")
def broken_matmul_cuda_order(a: Any, b: Any, out: Any, launch: Any) -> None:
    """Starts each dot product at ``blockDim.x % k``: every result is within the
    bound, but the same inputs give different bits under different launches."""
    _launch("matmul_rows", launch, a, b, out, 1, np.dtype(out.dtype).type(0))


# -- contract coverage: the derived value classes, views and parameter relevance ---------------
@implements("max", backend="numpy", name="good")
def good_max(x: Any, out: Any) -> None:
    out[0] = np.max(x)


@implements("max", backend="numpy", name="broken_through_float64")
def broken_max_through_float64(x: Any, out: Any) -> None:
    """numbagg 0.9.6's int64 nanmax: the maximum taken in float64, which holds no int64
    beyond 2**53 (INT64_MAX becomes 2**63, which casts back to INT64_MIN)."""
    with np.errstate(invalid="ignore"):
        out[0] = np.max(x.astype(np.float64)).astype(x.dtype)


@implements("max", backend="numpy", name="broken_skips_inf")
def broken_max_skips_inf(x: Any, out: Any) -> None:
    """Skips infinities as if they were overflow sentinels (NaN kept): the maximum of data
    holding +inf comes out finite."""
    kept = x[~np.isinf(x)] if x.dtype.kind == "f" else x
    out[0] = np.max(kept) if kept.size else x[0]


@implements("vector_add", backend="numpy", name="broken_offset_fast_path")
def broken_vector_add_offset(a: Any, b: Any, out: Any) -> None:
    """A fast path for contiguous inputs that reads from the start of the allocation, not of
    the view (a pointer taken from the buffer): an input that starts inside its buffer reads
    the wrong elements.  Strided inputs take the general path, which is right."""
    def start(v: Any) -> Any:
        unit_stride = v.ndim == 1 and v.strides[0] == v.itemsize
        if unit_stride and v.base is not None and v.base.flags["C_CONTIGUOUS"]:
            return v.base.reshape(-1)[: v.size].reshape(v.shape)
        return v
    out[...] = start(a) + start(b)


@implements("saxpy", backend="numpy", name="good")
def good_saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    out[...] = out.dtype.type(alpha) * x + y


@implements("saxpy", backend="numpy", name="broken_ignores_alpha")
def broken_saxpy_ignores_alpha(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """`alpha` hard-coded to -1.5 (a test's value left in): right for that alpha only."""
    out[...] = out.dtype.type(-1.5) * x + y


def _heat_steps(u: Any, alpha: Any, steps: int, out: Any) -> None:
    v = u.copy()
    for _ in range(steps):
        w = np.zeros_like(v)
        w[1:-1] = v[1:-1] + alpha * (v[:-2] - 2 * v[1:-1] + v[2:])
        v = w
    out[...] = v


@implements("heat_steps_1d", backend="numpy", name="good")
def good_heat_steps(u: Any, alpha: Any, steps: int, out: Any) -> None:
    _heat_steps(u, u.dtype.type(alpha), steps, out)


@implements("heat_steps_1d", backend="numpy", name="broken_one_step")
def broken_heat_steps_one_step(u: Any, alpha: Any, steps: int, out: Any) -> None:
    """Takes one step whatever `steps` says."""
    _heat_steps(u, u.dtype.type(alpha), 1, out)


@implements("halo_exchange_1d", backend="numpy", name="broken_width_one")
def broken_halo_1d_width_one(a: Any, width: int) -> None:
    """Exchanges one ghost cell whatever `width` says (written for a 3-point stencil)."""
    a[:1] = a[-2:-1]
    a[-1:] = a[1:2]


@implements("monte_carlo_pi", backend="numpy", name="broken_fixed_seed")
def broken_monte_carlo_fixed_seed(seed: int, out: Any) -> None:
    """Ignores `seed` (a generator seeded once, with a constant): every statistical test of a
    run passes, and every run draws the same samples."""
    out[...] = np.random.default_rng(12345).random(out.shape).astype(out.dtype)


@implements("vector_add", backend="numpy", name="broken_large_only")
def broken_vector_add_large_only(a: Any, b: Any, out: Any) -> None:
    """Right up to 100 elements and from 10,000 on; between, the last element is left
    unwritten (a code path for mid-sized inputs).  No case of the boundary sweep or the repeat
    check is that size: only the random search meets it, so its failure carries the
    hypothesis seed that reruns it."""
    out[...] = a + b
    if 100 < a.size < 10_000:
        out[-1] = 0


# -- contract coverage: one realistic bug per derived class, each with a correct twin ----------
#
# Each bug below passes the kernel's own sweep and every derived class before its own (the
# sweep stops at the first failing case), so the class it is listed under is the check that
# catches it.

def _chunked_max(x: Any, tail_keeps_nan: bool) -> Any:
    """A vectorised maximum: whole chunks of 8 by ``np.max`` (NaN propagates), the remainder
    by a scalar loop, as a SIMD kernel's main loop and its tail."""
    n = x.shape[0]
    body = n - n % 8
    best = np.max(x[:body]) if body else x[0]
    for v in x[body:]:
        if v > best or (tail_keeps_nan and v != v):
            best = v
    return best


@implements("max", backend="numpy", name="good_chunked")
def good_max_chunked(x: Any, out: Any) -> None:
    out[0] = _chunked_max(x, True)


@implements("max", backend="numpy", name="broken_nan_in_tail")
def broken_max_nan_in_tail(x: Any, out: Any) -> None:
    """The tail loop compares with ``>``: a NaN among the last ``n % 8`` elements is dropped
    (one first or in the middle sits in a whole chunk and propagates)."""
    out[0] = _chunked_max(x, False)


#: The identities of max by dtype, for the dtypes the author tested.
_MAX_IDENTITY = {"float32": -np.inf, "float64": -np.inf, "int64": np.iinfo(np.int64).min}


@implements("max", backend="numpy", name="broken_int32_identity")
def broken_max_int32_identity(x: Any, out: Any) -> None:
    """Starts the running maximum at its dtype's identity from a table that lacks int32,
    whose default is 0: wrong for int32 data that is all negative (the own sweep's all
    negative case is float32 and int64)."""
    best = x.dtype.type(_MAX_IDENTITY.get(x.dtype.name, 0))
    out[0] = max(best, np.max(x)) if x.dtype.kind != "f" else np.max(x)


def _scaled_sum_of_squares(x: Any, out: Any, scale_of: Any, reciprocal: bool) -> None:
    """``sum(x*x)`` scaled by a power of two near ``max|x|`` (as BLAS's nrm2 scales, so that
    the squares neither overflow nor underflow early); exact scaling, so the result has the
    unscaled sum's rounding."""
    if x.dtype.kind != "f":
        out[0] = np.sum(x * x, dtype=x.dtype)
        return
    scale = scale_of(np.abs(x))
    if scale == 0:  # all zeros (or empty): nothing to scale
        out[0] = 0
        return
    if not np.isfinite(scale):  # an infinity or a NaN decides the result unscaled
        out[0] = np.sum(x * x, dtype=x.dtype)
        return
    s = np.ldexp(x.dtype.type(1), int(np.frexp(scale)[1]) - 1)  # 2**floor(log2(scale))
    y = x * (x.dtype.type(1) / s) if reciprocal else x / s
    out[0] = (np.sum(y * y, dtype=x.dtype) * s) * s


def _max_or_zero(a: Any) -> Any:
    return np.max(a, initial=0)


def _fmax_or_zero(a: Any) -> Any:
    return np.fmax.reduce(a, initial=0)


@implements("sum_of_squares", backend="numpy", name="good_scaled")
def good_sum_of_squares_scaled(x: Any, out: Any) -> None:
    _scaled_sum_of_squares(x, out, _max_or_zero, False)


@implements("sum_of_squares", backend="numpy", name="broken_fmax_scale")
def broken_sum_of_squares_fmax_scale(x: Any, out: Any) -> None:
    """Finds the scale with ``fmax`` (C's fmax, which skips NaN, as a CUDA kernel would):
    with one NaN the scaled squares still make NaN, but when every element is NaN the scale
    is 0 and the all-zero shortcut returns 0 where the sum is NaN."""
    _scaled_sum_of_squares(x, out, _fmax_or_zero, False)


@implements("sum_of_squares", backend="numpy", name="broken_reciprocal_scale")
def broken_sum_of_squares_reciprocal(x: Any, out: Any) -> None:
    """Multiplies by the reciprocal of the scale instead of dividing (one division, not n):
    the reciprocal of a subnormal scale overflows to inf, so subnormal data gives inf where
    the sum of its squares is 0."""
    _scaled_sum_of_squares(x, out, _max_or_zero, True)


@implements("grad_sigmoid", backend="numpy", name="good")
def good_grad_sigmoid(x: Any) -> Any:
    e = np.exp(-np.abs(x))
    return e / ((1 + e) * (1 + e))


@implements("grad_sigmoid", backend="numpy", name="broken_textbook")
def broken_grad_sigmoid_textbook(x: Any) -> Any:
    """The textbook ``exp(-x) / (1 + exp(-x))**2``: ``exp(-x)`` overflows for very negative
    ``x`` and inf / inf is NaN where the derivative is 0."""
    e = np.exp(-x)
    return e / ((1 + e) * (1 + e))


def _exp_sigmoid(x: Any, out: Any, two_sided: bool) -> None:
    wide = x.astype(np.float64)
    if two_sided:  # exp of -|x| only: never overflows
        e = np.exp(-np.abs(wide))
        out[...] = np.where(wide >= 0, 1 / (1 + e), e / (1 + e))
        return
    e = np.exp(wide)
    out[...] = np.where(np.isposinf(wide), 1.0, e / (1 + e))


@implements("sigmoid", backend="numpy", name="good_two_sided")
def good_sigmoid_two_sided(x: Any, out: Any) -> None:
    _exp_sigmoid(x, out, True)


@implements("sigmoid", backend="numpy", name="broken_inf_patched")
def broken_sigmoid_inf_patched(x: Any, out: Any) -> None:
    """``e / (1 + e)`` with ``e = exp(x)`` in float64, +inf patched to 1 (the NaN it gave
    there was seen): a finite ``x`` above ~709 still overflows ``exp`` and gives inf / inf =
    NaN where the sigmoid is 1."""
    _exp_sigmoid(x, out, False)


def _unit_stride(v: Any) -> Any:
    """``v`` read as a C kernel reads a pointer: ``len(v)`` elements one after another."""
    return np.lib.stride_tricks.as_strided(v, v.shape, (v.itemsize,))


def _vector_add_dispatch(a: Any, b: Any, out: Any, check_each: bool) -> None:
    def unit(v: Any) -> bool:
        return v.ndim == 1 and v.strides[0] == v.itemsize

    if unit(a) and (unit(b) or not check_each):  # the fast path: raw pointers
        out[...] = _unit_stride(a) + _unit_stride(b)
    else:
        out[...] = a + b


@implements("vector_add", backend="numpy", name="good_layout_each")
def good_vector_add_layout_each(a: Any, b: Any, out: Any) -> None:
    _vector_add_dispatch(a, b, out, True)


@implements("vector_add", backend="numpy", name="broken_layout_of_a")
def broken_vector_add_layout_of_a(a: Any, b: Any, out: Any) -> None:
    """Chooses the raw-pointer fast path from ``a``'s strides alone and assumes ``b`` is laid
    out alike: a strided ``b`` beside a contiguous ``a`` is read one element after another."""
    _vector_add_dispatch(a, b, out, False)


def _c_rows(m: Any) -> Any:
    """``m``'s memory read as C-order rows (a pointer and a row length)."""
    return np.lib.stride_tricks.as_strided(m, m.shape, (m.shape[1] * m.itemsize, m.itemsize))


def _column_major(m: Any) -> bool:
    return bool(m.flags.f_contiguous and not m.flags.c_contiguous)


def _matmul_order(a: Any, b: Any, out: Any, check_each: bool) -> None:
    if _column_major(a) and (_column_major(b) or not check_each):
        # Column-major operands: C^T = B^T A^T, each transpose a C-order array in memory.
        out[...] = (_c_rows(b.T) @ _c_rows(a.T)).T
    else:
        out[...] = a @ b


@implements("matmul", backend="numpy", name="good_order_each")
def good_matmul_order_each(a: Any, b: Any, out: Any) -> None:
    _matmul_order(a, b, out, True)


@implements("matmul", backend="numpy", name="broken_order_of_a")
def broken_matmul_order_of_a(a: Any, b: Any, out: Any) -> None:
    """Reads the storage order from ``a`` alone (one BLAS-style order flag for both
    operands): a column-major ``a`` beside a row-major ``b`` reads ``b``'s memory as if it
    were column-major too."""
    _matmul_order(a, b, out, False)


def _matmul_sparse_rows(a: Any, b: Any, out: Any, write_zeros: bool) -> None:
    for i in range(a.shape[0]):
        if a.dtype.kind in "iu" and not a[i].any():  # an empty row of counts: skip the work
            if write_zeros:
                out[i] = 0
            continue
        out[i] = a[i] @ b


@implements("matmul", backend="numpy", name="good_sparse_rows")
def good_matmul_sparse_rows(a: Any, b: Any, out: Any) -> None:
    _matmul_sparse_rows(a, b, out, True)


@implements("matmul", backend="numpy", name="broken_skips_zero_rows")
def broken_matmul_skips_zero_rows(a: Any, b: Any, out: Any) -> None:
    """Skips the all-zero rows of an integer ``a`` (an adjacency or count matrix) as if ``out``
    started at zero: those rows of ``out`` keep what they held."""
    _matmul_sparse_rows(a, b, out, False)


def _block_sum(x: Any, out: Any, launch: Any, shared_size: int) -> None:
    """A block-wise sum emulated on the host: each block's threads store their element (0
    past the end) into the block's shared array, which is summed; then the partials."""
    block, grid = launch.block[0], launch.grid[0]
    n = x.shape[0]
    partials = np.zeros(grid, dtype=x.dtype)
    threads = np.arange(block)
    for g in range(grid):
        shared = np.zeros(shared_size or block, dtype=x.dtype)
        index = g * block + threads
        inside = index < n
        shared[threads] = np.where(inside, x[np.minimum(index, max(n - 1, 0))] if n else 0, 0)
        partials[g] = np.sum(shared, dtype=x.dtype)
    out[0] = np.sum(partials, dtype=x.dtype)


@implements("sum", backend="numpy", name="good_shared_per_block")
def good_sum_shared_per_block(x: Any, out: Any, launch: Any) -> None:
    _block_sum(x, out, launch, 0)


@implements("sum", backend="numpy", name="broken_shared_256")
def broken_sum_shared_256(x: Any, out: Any, launch: Any) -> None:
    """Sizes the shared array for the 256 threads the author launches: a larger block's
    threads store past its end (a simulator or compute-sanitizer raises, a GPU corrupts)."""
    _block_sum(x, out, launch, 256)


@implements("saxpy", backend="numpy", name="broken_saturating")
def broken_saxpy_saturating(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """Saturates: clamps the result to the dtype's finite range (as fixed-point DSP code
    does), so an infinite input gives the largest finite value where IEEE gives inf."""
    largest = np.finfo(out.dtype).max
    out[...] = np.clip(out.dtype.type(alpha) * x + y, -largest, largest)


@implements("gufunc_dot", backend="numpy", name="good_float64")
def good_gufunc_dot(x: Any, y: Any) -> Any:
    dtype = np.result_type(x, y)
    if dtype.kind != "f":
        return np.sum(x * y, axis=-1, dtype=dtype)
    return np.sum(x.astype(np.float64) * y, axis=-1).astype(dtype)


@implements("gufunc_dot", backend="numpy", name="broken_float32_inputs")
def broken_gufunc_dot_float32(x: Any, y: Any) -> Any:
    """Converts the inputs to float32 for speed (mixed precision): exact for integer-valued
    data, rounded (far beyond float64's bound) for the rest."""
    dtype = np.result_type(x, y)
    if dtype.kind != "f":
        return np.sum(x * y, axis=-1, dtype=dtype)
    return np.sum(x.astype(np.float32) * y.astype(np.float32), axis=-1,
                  dtype=np.float32).astype(dtype)
