"""The failures of the GPU run of 2026-11-27 (docs/gpu-runs/2026-11-27-H200/), without a GPU.

That run's interop step failed ten items on size-0 arrays, from two causes.
Each test rebuilds the behaviour from a stand-in that acts as the framework did
there, runs the plugin's code on it, and fails when the fix is reverted.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.interop.cases import Case

# -- numba-cuda 0.30 cannot slice a size-0 device array (8 cai-numba-cuda->* items) -------


class EmptyAwareDeviceNDArray:
    """A numba-cuda ``DeviceNDArray`` stand-in whose indexing is numba-cuda's own:
    ``_do_getitem`` takes the view's extents from the real ``dummyarray`` and asks
    ``MemoryPointer.view`` for them, which raises on a NULL (size-0) buffer."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype
        self.size = host.size

    def __getitem__(self, key: Any) -> EmptyAwareDeviceNDArray:
        from numba.cuda.cudadrv import dummyarray

        view = dummyarray.Array.from_desc(0, self.shape, self.strides,
                                          self.dtype.itemsize)[key]
        for start, stop in view.iter_contiguous_extent():
            if self.size == 0 and stop - start != 0:  # driver.MemoryPointer.view
                raise RuntimeError("non-empty slice into empty slice")
        return EmptyAwareDeviceNDArray(self.host[key])


@pytest.fixture
def numba_adapter(monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("numba.cuda")
    from pytest_gpucheck.backends.numba.adapter import NumbaCudaAdapter

    fake_cuda = SimpleNamespace(
        to_device=lambda host: EmptyAwareDeviceNDArray(host.copy(order="K")),
        device_array=lambda shape, dtype: EmptyAwareDeviceNDArray(np.empty(shape, dtype)))
    monkeypatch.setattr(NumbaCudaAdapter, "_cuda", lambda self: fake_cuda)
    return NumbaCudaAdapter(SimpleNamespace(name="numba-cuda", is_simulator=False))


@pytest.mark.parametrize("case", [
    Case("bool", (0, 0, 1), "C", ((0, 0, 1), (0, 0, 1), (1, 1, 1))),  # the run's shrunk case
    Case("float64", (3, 0), "C", ((1, 3, 1), (0, 0, 1))),
    Case("int32", (0, 4), "F", ((0, 0, 1), (1, 4, 2))),
], ids=repr)
def test_numba_cuda_produces_views_of_empty_arrays(numba_adapter: Any, case: Case) -> None:
    array = numba_adapter.produce(case)
    assert array.shape == case.host().shape
    assert array.dtype == np.dtype(case.dtype)


def test_numba_cuda_still_slices_arrays_that_hold_data(numba_adapter: Any) -> None:
    """The fix is only for size-0 bases: a view of data is still a view of it."""
    case = Case("float64", (4, 6), "C", ((1, 4, 1), (0, 6, 2)))
    array = numba_adapter.produce(case)
    np.testing.assert_array_equal(array.host, case.host())


def test_numba_cuda_dummyarray_still_spans_an_item_of_an_empty_array() -> None:
    """The upstream defect the workaround exists for (to report to numba-cuda): NumPy
    gives size-0 arrays zero strides, which ``dummyarray`` reads as a broadcast axis."""
    from numba.cuda.cudadrv import dummyarray

    host = np.reshape(np.zeros(0, np.float64), (3, 0)).copy()
    view = dummyarray.Array.from_desc(0, host.shape, host.strides, 8)[0:3, 0:0]
    assert [tuple(extent) for extent in view.iter_contiguous_extent()] != [(0, 0)]


# -- our cuda-python arrays exported the address of an empty view (2 items) ---------------


@dataclass
class FakeBuffer:
    """A cuda.core Buffer stand-in: ``size`` bytes at a made-up device address."""

    handle: int
    size: int
    device_id: int = 0


def cuda_core_view_as_cai(obj: Any, allocations: list[FakeBuffer]) -> int:
    """The device cuda.core's ``StridedMemoryView.from_cuda_array_interface`` finds
    (``view_as_cai``, cuda.core >= 0.5): 0 is taken as the current device (0 here), any
    other pointer is looked up by the driver, which refuses one outside an allocation."""
    pointer = obj.__cuda_array_interface__["data"][0]
    if pointer == 0:
        return 0
    for buffer in allocations:
        if buffer.handle <= pointer < buffer.handle + buffer.size:
            return buffer.device_id
    raise RuntimeError("CUDA_ERROR_INVALID_VALUE")


def test_an_empty_cuda_python_view_exports_a_null_pointer() -> None:
    """The CUDA Array Interface: "For zero-size arrays, use 0 here"."""
    from pytest_gpucheck.backends.cuda_python.backend import DeviceArray

    base = FakeBuffer(handle=0x302001A00, size=0)
    empty = DeviceArray(base, (0, 0, 1), np.dtype("bool")).gpucheck_slice_view(
        (slice(0, 0), slice(0, 0), slice(1, 1)))
    assert empty.__cuda_array_interface__["data"] == (0, False)
    assert cuda_core_view_as_cai(empty, [base]) == 0


def test_a_cuda_python_view_with_data_exports_its_address() -> None:
    from pytest_gpucheck.backends.cuda_python.backend import DeviceArray

    base = FakeBuffer(handle=0x302001A00, size=48)
    view = DeviceArray(base, (2, 3), np.dtype("float64")).gpucheck_slice_view(
        (slice(1, 2), slice(0, 3)))
    assert view.__cuda_array_interface__["data"] == (0x302001A00 + 24, False)
    assert cuda_core_view_as_cai(view, [base]) == 0


# -- CuPy refuses the null pointer the interface asks of size-0 arrays (3 items) ---------


def _null_refusal(shape: tuple[int, ...]) -> Any:
    from pytest_gpucheck.backends.array_facts import ArrayFacts
    from pytest_gpucheck.interop.outcomes import Exchange, Outcome

    size = int(np.prod(shape))
    before = ArrayFacts(0 if size == 0 else 0x7F00_0000, shape, (8,) * len(shape),
                        np.dtype("float64"), "cuda:0", False)
    return Exchange(Outcome.REFUSES, before, error=RuntimeError(
        "UnownedMemory requires explicit device ID for a null pointer."))


@pytest.mark.parametrize(("producer", "shape", "kind"), [
    ("cuda-python", (0,), "ok"), ("numba-cuda", (0, 2, 2), "ok"),
    ("cuda-python", (3,), "fail"),  # the same refusal of an array with data: undocumented
])
def test_cupy_refusing_a_null_cai_is_documented_for_empty_arrays_only(
        producer: str, shape: tuple[int, ...], kind: str) -> None:
    from pytest_gpucheck.interop.converters import library_converter
    from pytest_gpucheck.interop.documented import judge

    verdict = judge(Case("float64", shape), _null_refusal(shape),
                    library_converter("cai", producer, "cupy"))
    assert verdict.kind == kind, verdict.message
    if kind == "ok":
        assert verdict.documented is not None
        assert verdict.documented.key == "cupy-refuses-null-cai"
