"""The hypothesis strategies: bucketed sizes, layouts on the device, launch configurations."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.checking import strategies as gst

NUMPY = get_backend("numpy")


def test_size_buckets_hold_the_sizes_that_break_kernels() -> None:
    for sizing in (gst.FULL, gst.SIMULATOR):
        assert {0, 1, 2, 3, 31, 33} <= set(sizing.sizes)
        assert any(n > 1 and all(n % p for p in range(2, n)) and n > 7 for n in sizing.sizes)
    assert 1024 in gst.FULL.blocks
    assert max(gst.SIMULATOR.blocks) <= gst.SIMULATOR.max_threads == 32


def test_sizing_per_backend() -> None:
    assert gst.sizing_for("numba-cudasim") is gst.SIMULATOR
    assert gst.sizing_for("cupy") is gst.FULL


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.sampled_from(gst.FULL.sizes))
def test_covering_launches_cover_every_element(data: st.DataObject, n: int) -> None:
    launch = data.draw(gst.launch_1d(gst.FULL, n))
    assert launch.total_threads[0] >= n
    assert launch.total_threads[0] < max(n, 1) + 2 * launch.block[0]


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.sampled_from(gst.FULL.sizes))
def test_grid_stride_launches_have_fewer_threads_than_elements(data: st.DataObject,
                                                               n: int) -> None:
    launch = data.draw(gst.launch_1d(gst.FULL, n, grid_stride=True))
    if n >= 2:
        assert launch.total_threads[0] < n


@settings(max_examples=30, deadline=None)
@given(data=st.data(), shape=gst.shapes_2d(gst.SIMULATOR))
def test_nd_launches_are_in_cuda_order_and_respect_the_block_limit(
        data: st.DataObject, shape: tuple[int, int]) -> None:
    launch = data.draw(gst.launch_nd(gst.SIMULATOR, shape))
    assert math.prod(launch.block) <= gst.SIMULATOR.max_threads
    rows, cols = shape
    assert launch.total_threads[0] >= cols  # x runs along the last axis
    assert launch.total_threads[1] >= rows


def test_strided_layout_is_a_view_with_sentinels_in_the_gaps() -> None:
    host = np.arange(5, dtype=np.float32)
    placed = gst.to_device_with_layout(NUMPY, host, gst.STRIDED)
    np.testing.assert_array_equal(placed.view, host)
    assert not placed.view.flags.c_contiguous
    assert np.isnan(placed.parent[0])  # a gap holds the NaN sentinel
    assert np.shares_memory(placed.view, placed.parent)


def test_transposed_layout_is_an_f_order_view() -> None:
    host = np.arange(6, dtype=np.int64).reshape(2, 3)
    placed = gst.to_device_with_layout(NUMPY, host, gst.TRANSPOSED)
    np.testing.assert_array_equal(placed.view, host)
    assert placed.view.flags.f_contiguous
    assert not placed.view.flags.c_contiguous


@settings(max_examples=10, deadline=None)
@given(values=gst.distinct_values(np.float32, (3, 4)))
def test_distinct_values_are_distinct(values: np.ndarray) -> None:
    assert values.shape == (3, 4)
    assert len(np.unique(values)) == 12


@settings(max_examples=30, deadline=None)
@given(x=gst.arrays(np.float32, 64, gst.nonzero_integer_valued(np.float32, 8)))
def test_nonzero_integer_valued_elements(x: np.ndarray) -> None:
    assert np.all(x != 0)
    assert np.all(x == np.round(x))
    assert np.all(np.abs(x) <= 8)
