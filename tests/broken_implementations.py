"""Deliberately broken (and matching correct) kernel implementations.

``tests/test_conformance_rejects_broken.py`` loads this module as a plugin
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
from hypothesis import settings

from pytest_gpucheck.registry import implements

# Enough derandomized examples that each bug is met in every run (the simulator
# gets a quarter of them), few enough to keep the run fast.
settings.register_profile("proof", max_examples=32, derandomize=True, deadline=None,
                          database=None)


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
