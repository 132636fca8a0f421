"""The repeat check of the conformance harness (``repeat_check``), in process: runs that
disagree where the contract is exact fail with the race message; a float result that
follows the thread count passes and has its spread recorded; correct twins pass.

The thread pool is a fake backend (NumPy arrays) whose ``using_threads`` says which count
a call runs on, so the verdicts do not depend on timing; the real race on Numba's pool is
proven in ``tests/conformance/test_conformance_rejects_broken.py`` (``broken_race``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.backends.numpy.backend import NumpyBackend
from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.assertions import CheckContext
from pytest_gpucheck.conformance.harness import POOL_RUNS, RACE, repeat_check
from pytest_gpucheck.conformance.specs import spec_for
from pytest_gpucheck.registry import Implementation


class PoolBackend(NumpyBackend):
    """NumPy arrays, and a pool of two threads whose count the kernels can read."""

    name = "numpy"  # the sizing of a host backend
    threads = 2

    def thread_counts(self) -> tuple[int, ...]:
        return (2, 1)

    @contextlib.contextmanager
    def using_threads(self, count: int) -> Iterator[None]:
        before, PoolBackend.threads = PoolBackend.threads, count
        try:
            yield
        finally:
            PoolBackend.threads = before


def _check(kernel: str, func: Any, backend: Any) -> dict[str, str]:
    notes: dict[str, str] = {}

    def context(case: str, launch: Any, seed: Any) -> CheckContext:
        return CheckContext(kernel=kernel, backend=backend.name, implementation="mine",
                            case=case, launch=launch)

    impl = Implementation(kernel, backend.name, func, "mine", "user")
    repeat_check(spec_for(kernel), impl, backend, gst.FULL, context, notes)
    return notes


def _int_sum_losing_on_the_pool(x: Any, out: Any) -> None:
    """An integer sum that loses one chunk's updates on every 7th call on two threads."""
    _int_sum_losing_on_the_pool.calls += 1  # type: ignore[attr-defined]
    lost = PoolBackend.threads > 1 and _int_sum_losing_on_the_pool.calls % 7 == 0  # type: ignore[attr-defined]
    out[0] += np.sum(x[: x.shape[0] // 2] if lost else x, dtype=x.dtype)


def _sum(x: Any, out: Any) -> None:
    out[0] += np.sum(x, dtype=x.dtype)


def test_runs_that_disagree_on_an_exact_result_are_a_race() -> None:
    _int_sum_losing_on_the_pool.calls = 0  # type: ignore[attr-defined]
    with pytest.raises(AssertionError) as failure:
        _check("sum", _int_sum_losing_on_the_pool, PoolBackend())
    message = str(failure.value)
    assert message.startswith(f"{RACE}: out differs between run 1 (2 threads) and run 7 "
                              "(2 threads) in 1 element(s)")
    assert f"repeat check: {POOL_RUNS + 1} runs on 2 threads x {POOL_RUNS}, 1 thread x 1" \
        in message
    assert "n=65537, dtype=int32" in message


def test_a_correct_kernel_passes_on_the_pool() -> None:
    notes = _check("sum", _sum, PoolBackend())
    assert "gpucheck.repeat_spread" in notes  # the float case ran too, once per count


def _float_sum_by_threads(x: Any, out: Any) -> None:
    """Sums in as many chunks as threads: a float total that follows the thread count
    (within the tolerance), an integer total that does not."""
    parts = np.array_split(x, PoolBackend.threads)
    if x.dtype.kind == "f":
        # Each chunk summed in order (cumsum), as a thread's loop does.
        out[0] = x.dtype.type(sum(np.cumsum(p, dtype=np.float32)[-1] for p in parts if p.size))
    else:
        out[0] = sum(np.sum(p, dtype=x.dtype) for p in parts)


def test_a_float_result_that_follows_the_threads_passes_with_its_spread() -> None:
    notes = _check("sum", _float_sum_by_threads, PoolBackend())
    assert float(notes["gpucheck.repeat_spread"]) > 0


_stale: dict[str, Any] = {}


def _transpose_reading_stale_scratch(a: Any, out: Any) -> None:
    """Reuses a scratch buffer from the call before without clearing it: the second call
    reads what the first left (an uninitialised read, on a backend without a pool)."""
    scratch = _stale.setdefault("scratch", np.zeros(out.shape, out.dtype))
    scratch[...] += a.T
    out[...] = scratch


def test_a_second_run_that_reads_stale_memory_is_caught_without_a_pool() -> None:
    _stale.clear()
    with pytest.raises(AssertionError) as failure:
        _check("transpose", _transpose_reading_stale_scratch, NumpyBackend())
    assert str(failure.value).startswith(f"{RACE}: out differs between run 1 and run 2")


def test_a_correct_transpose_passes_twice() -> None:
    def transpose(a: Any, out: Any) -> None:
        out[...] = a.T

    assert _check("transpose", transpose, NumpyBackend()) == {}


def _index_map_by_block(out: Any, launch: Any) -> None:
    """Right under the power-of-two sweep block, off by one under the odd one."""
    out[...] = np.arange(out.shape[0]) + (launch.block[0] % 2)


def test_an_exact_result_that_follows_the_launch_is_named_as_such() -> None:
    with pytest.raises(AssertionError) as failure:
        _check("index_map_1d", _index_map_by_block, NumpyBackend())
    message = str(failure.value)
    assert message.startswith("out differs between run 1 (launch grid=")
    assert "and run 3 (launch grid=" in message
    assert "but this result is exact and must not depend on the launch" in message


def test_a_correct_index_map_passes_under_both_launches() -> None:
    def index_map(out: Any, launch: Any) -> None:
        out[...] = np.arange(out.shape[0])

    assert _check("index_map_1d", index_map, NumpyBackend()) == {}
