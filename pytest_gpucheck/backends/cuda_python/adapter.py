"""cuda-python: ``DeviceArray`` (a cuda.core Buffer with CAI) as producer,
``cuda.core``'s ``StridedMemoryView`` as consumer of DLPack and CAI.

``StridedMemoryView`` is a view, not an array: it is read and written here
through the driver at the addresses its pointer and element strides give.
Written against cuda-core 1.2.2; the GPU paths have not run in this
project's CI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts, c_strides


def strided_memory_view_class() -> Any:
    """``StridedMemoryView`` from ``cuda.core.utils`` (``cuda.core.experimental.utils`` < 0.4)."""
    try:
        from cuda.core.utils import StridedMemoryView  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        from cuda.core.experimental.utils import (  # type: ignore[import-untyped, unused-ignore]
            StridedMemoryView,
        )
    return StridedMemoryView


def _device_array_class() -> Any:
    from pytest_gpucheck.backends.cuda_python.device_array import DeviceArray

    return DeviceArray


def _read_only_class() -> Any:
    DeviceArray = _device_array_class()

    class ReadOnlyDeviceArray(DeviceArray):  # type: ignore[misc, valid-type]
        """A DeviceArray whose CUDA Array Interface marks the data read-only."""

        @property
        def readonly(self) -> bool:
            return True

    return ReadOnlyDeviceArray


def _span(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """Lowest and one-past-highest byte offsets a strided array touches."""
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=False))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=False)) + itemsize
    return low, high


class CudaCoreAdapter(Adapter):
    """cuda-python on the backend's device."""

    name = "cuda-python"
    readonly = "flag"  # a CAI producer can mark its data read-only

    @property
    def device(self) -> str:
        return f"cuda:{self.backend.device_index}"

    def upload(self, host: np.ndarray) -> Any:
        from pytest_gpucheck.backends.cuda_python.device_array import copy_to_device

        backend = self.backend
        buffer = backend.device.allocate(max(host.nbytes, 1), stream=backend.stream)
        if not (host.flags.c_contiguous or host.flags.f_contiguous):
            raise ValueError("upload takes C- or Fortran-contiguous arrays")
        if host.nbytes:
            # Byte for byte in either order: the strides below describe the layout.
            copy_to_device(backend.stream, int(buffer.handle), host)
        strides = None if host.flags.c_contiguous else tuple(host.strides)
        return _device_array_class()(buffer, tuple(host.shape), host.dtype, strides, 0,
                                     stream=backend.stream)

    def view(self, array: Any, slices: tuple[slice, ...]) -> Any:
        return array.gpucheck_slice_view(slices)

    def make_readonly(self, array: Any) -> Any:
        return _read_only_class()(array.buffer, array.shape, array.dtype, array.strides,
                                  array.offset, stream=array.stream)

    def _stream_pointer(self) -> int:
        return int(self.backend.stream.handle)

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        if copy is not None:
            raise NotAvailable("cuda.core StridedMemoryView.from_dlpack takes no copy argument")
        view_class = strided_memory_view_class()
        stream = self._stream_pointer()

        def import_dlpack(obj: Any) -> Any:
            return view_class.from_dlpack(obj, stream_ptr=stream)

        return import_dlpack

    def cai_importer(self) -> Callable[[Any], Any]:
        view_class = strided_memory_view_class()
        stream = self._stream_pointer()

        def import_cai(obj: Any) -> Any:
            return view_class.from_cuda_array_interface(obj, stream_ptr=stream)

        return import_cai

    def owns(self, array: Any) -> bool:
        return isinstance(array, (_device_array_class(), strided_memory_view_class()))

    def facts(self, array: Any) -> ArrayFacts:
        if isinstance(array, strided_memory_view_class()):
            return memory_view_facts(array)
        dtype = np.dtype(array.dtype)
        shape = tuple(array.shape)
        return ArrayFacts(
            pointer=int(array.ptr),
            shape=shape,
            strides=tuple(array.strides or c_strides(shape, dtype.itemsize)),
            dtype=dtype,
            # The buffer's own device: the array may come from another GPU's backend.
            device=f"cuda:{int(array.buffer.device_id)}",
            readonly=bool(array.readonly),
        )

    def to_host(self, array: Any) -> np.ndarray:
        from pytest_gpucheck.backends.cuda_python.device_array import copy_to_host

        facts = self.facts(array)
        self.synchronize()
        if facts.size == 0:
            return np.empty(facts.shape, dtype=facts.dtype)
        low, high = _span(facts.shape, facts.strides, facts.dtype.itemsize)
        raw = np.empty(high - low, dtype=np.uint8)
        if facts.device == "cpu":
            import ctypes

            ctypes.memmove(raw.ctypes.data, facts.pointer + low, high - low)
        else:
            copy_to_host(self.backend.stream, raw, facts.pointer + low)
        return np.ndarray(facts.shape, dtype=facts.dtype, buffer=raw, offset=-low,
                          strides=facts.strides).copy()

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        from pytest_gpucheck.backends.cuda_python.device_array import copy_to_device

        facts = self.facts(array)
        if facts.readonly:
            raise ValueError("the view is read-only")
        host = np.ascontiguousarray(np.asarray(value, dtype=facts.dtype).reshape(()))
        address = facts.pointer + sum(i * s for i, s in zip(index, facts.strides, strict=False))
        # On the backend's stream, after everything queued there (a consumer's
        # view of the same memory is read through this stream too).
        copy_to_device(self.backend.stream, address, host)


def memory_view_facts(view: Any) -> ArrayFacts:
    """Facts of a ``StridedMemoryView`` (its strides count elements; None means C order)."""
    dtype = np.dtype(view.dtype)
    shape = tuple(view.shape)
    strides = view.strides
    byte_strides = (tuple(int(s) * dtype.itemsize for s in strides) if strides is not None
                    else c_strides(shape, dtype.itemsize))
    device_id = int(view.device_id)
    return ArrayFacts(
        pointer=int(view.ptr),
        shape=shape,
        strides=byte_strides,
        dtype=dtype,
        device="cpu" if device_id < 0 else f"cuda:{device_id}",
        readonly=bool(view.readonly),
    )
