"""Guard-banded buffers report exactly which elements outside ``out`` were written."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.checking.guards import (
    GUARD_WIDTH,
    GuardedBuffer,
    guard_value,
    poison_value,
    same_bits,
)

NUMPY = get_backend("numpy")


def _past(view: np.ndarray, extra: int) -> np.ndarray:
    """``view`` extended by ``extra`` elements through its buffer (a kernel overrun)."""
    return np.lib.stride_tricks.as_strided(view, shape=(view.shape[0] + extra,),
                                           strides=view.strides)


def test_untouched_buffer_reports_nothing_and_keeps_the_poison() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (5,), np.float32, poison_value(np.float32))
    readback = guarded.read()
    assert readback.ok
    assert readback.describe() == ""
    assert same_bits(readback.region, np.broadcast_to(poison_value(np.float32), (5,)).copy()).all()


def test_one_element_past_the_end() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (7,), np.int32, 0)
    _past(guarded.view, 1)[:] = 1
    readback = guarded.read()
    assert readback.overwritten == [(7,)]
    assert readback.describe() == "wrote 1 element past the end of out: index 7"
    assert readback.region.tolist() == [1] * 7


def test_writes_before_the_start_and_past_the_end() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (4,), np.float64, 0.0)
    guarded.parent[GUARD_WIDTH - 2] = 1.0
    guarded.parent[GUARD_WIDTH + 4 + 2] = 1.0
    assert guarded.read().describe() == (
        "wrote 1 element before the start of out: index -2; "
        "wrote 1 element past the end of out: index 6"
    )


def test_writing_the_sentinel_value_elsewhere_is_still_seen_for_nan_payloads() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (3,), np.float32, 0.0)
    guarded.parent[0] = np.float32("nan")  # an ordinary NaN differs from the sentinel's bits
    assert guarded.read().overwritten == [(-GUARD_WIDTH,)]


def test_empty_output_overrun_lands_past_its_start() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (0,), np.float32, 0.0)
    _past(guarded.view, 1)[:] = 1.0
    assert guarded.read().describe() == "wrote 1 element past the end of out: index 0"


def test_two_dimensional_interior_is_a_non_contiguous_view() -> None:
    guarded = GuardedBuffer(NUMPY, "out", (3, 4), np.int64, 0)
    assert guarded.view.shape == (3, 4)
    assert not guarded.view.flags.c_contiguous
    guarded.parent[GUARD_WIDTH + 1, GUARD_WIDTH + 4] = 5  # one past the end of row 1
    guarded.parent[GUARD_WIDTH - 1, GUARD_WIDTH] = 5  # the row above row 0
    readback = guarded.read()
    assert readback.overwritten == [(-1, 0), (1, 4)]
    assert "past the end of axis 1" in readback.describe()
    assert "before the start of axis 0" in readback.describe()


def test_in_place_initial_contents() -> None:
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    guarded = GuardedBuffer(NUMPY, "a", data.shape, data.dtype, data)
    guarded.view += 1
    readback = guarded.read()
    assert readback.ok
    np.testing.assert_array_equal(readback.region, data + 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_sentinel_and_poison_differ(dtype: str) -> None:
    assert not same_bits(np.asarray(guard_value(dtype)), np.asarray(poison_value(dtype)))


def test_poison_of_integers_is_never_a_valid_index() -> None:
    assert poison_value(np.int32) == np.iinfo(np.int32).min
