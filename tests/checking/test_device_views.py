"""Views of device arrays: the cuda-python DeviceArray arithmetic matches NumPy's.

cuda-python arrays are bare buffers, so their strided and transposed views
are computed by hand; NumPy computes the same views, which makes it the
oracle (no GPU needed: only pointers and strides are compared).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from pytest_gpucheck.backends.cuda_python.backend import DeviceArray
from pytest_gpucheck.checking.device_views import layout_of, slice_view, transpose_view

BASE = 1 << 20


@dataclass
class FakeBuffer:
    """Stands in for a cuda.core Buffer: only its device pointer is read."""

    handle: int


def _as_device(host: np.ndarray) -> DeviceArray:
    return DeviceArray(FakeBuffer(BASE), host.shape, host.dtype)


def _pointer(view: np.ndarray, base: np.ndarray) -> int:
    return BASE + (view.__array_interface__["data"][0] - base.__array_interface__["data"][0])


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((10,), (slice(1, 9, 2),)),
        ((16,), (slice(8, 12),)),
        ((6, 7), (slice(2, 4), slice(1, 6))),
        ((9, 13), (slice(1, 9, 2), slice(1, 13, 3))),
        ((4, 5), (slice(2, 2), slice(1, 4))),
    ],
)
def test_slices_match_numpy(shape: tuple[int, ...], index: tuple[slice, ...]) -> None:
    host = np.zeros(shape, dtype=np.float32)
    expected = host[index]
    view = slice_view(_as_device(host), index)
    assert view.shape == expected.shape
    if expected.size:  # an empty view's pointer and strides are never used
        assert view.ptr == _pointer(expected, host)
        if expected.flags.c_contiguous:
            assert view.strides is None
        else:
            assert view.strides == expected.strides
    interface = view.__cuda_array_interface__
    # The CUDA Array Interface asks for pointer 0 for a size-0 array.
    assert interface["data"][0] == (view.ptr if expected.size else 0)
    assert interface["typestr"] == "<f4"


def test_transpose_matches_numpy() -> None:
    host = np.zeros((3, 5), dtype=np.int64)
    view = transpose_view(_as_device(host))
    assert view.shape == (5, 3)
    assert view.strides == host.T.strides


def test_transpose_of_a_slice_matches_numpy() -> None:
    host = np.zeros((8, 9), dtype=np.float64)
    index = (slice(1, 7, 2), slice(2, 8, 3))
    view = transpose_view(slice_view(_as_device(host), index))
    expected = host[index].T
    assert view.shape == expected.shape
    assert view.strides == expected.strides
    assert view.ptr == _pointer(expected, host)


def test_layout_of_numpy_and_torch() -> None:
    host = np.zeros((2, 3), dtype=np.float32)
    assert layout_of(host[:, ::2]) == "shape=(2, 2) strides=(12, 8)"
    torch = pytest.importorskip("torch")
    assert layout_of(torch.zeros(2, 3).T) == "shape=(3, 2) strides=(4, 12)"


def test_layout_of_device_array_reports_byte_strides() -> None:
    assert layout_of(_as_device(np.zeros((2, 3), np.int32))) == "shape=(2, 3) strides=(12, 4)"
