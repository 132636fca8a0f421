"""Host memory that passes for a GPU producer's arrays: a hand-written CUDA Array
Interface over NumPy memory, and the adapter methods every producer of such arrays
shares (the interop checks' fakes in tests/backends/test_gpu_paths_without_gpu.py and
tests/interop/test_interop_framework_behaviours.py: each says how its producer uploads)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter
from pytest_gpucheck.backends.array_facts import ArrayFacts


class FakeCaiArray:
    """Host memory behind a hand-written ``__cuda_array_interface__`` (no ``__dlpack__``),
    as CuPy, torch and cuda-python write it (``'<V2'`` for bfloat16, torch/_tensor.py);
    ``stream`` is left out unless given."""

    def __init__(self, host: np.ndarray, version: int = 3, stream: Any = "absent",
                 readonly: bool = False) -> None:
        self.host = host
        self.readonly = readonly
        strides = None if host.flags.c_contiguous else tuple(host.strides)
        self.__cuda_array_interface__: dict[str, Any] = {
            "shape": host.shape, "typestr": host.dtype.str,
            "data": (host.__array_interface__["data"][0], readonly),
            "strides": strides, "version": version}
        if stream != "absent":
            self.__cuda_array_interface__["stream"] = stream


def cai_facts(array: FakeCaiArray) -> ArrayFacts:
    """What the measured facts of ``array`` are: its host memory's, on ``cuda:0``."""
    host = array.host
    return ArrayFacts(pointer=host.__array_interface__["data"][0], shape=host.shape,
                      strides=host.strides, dtype=host.dtype, device="cuda:0",
                      readonly=array.readonly)


class FakeCaiProducer(Adapter):
    """A GPU producer named ``name`` whose arrays are :class:`FakeCaiArray`: on ``cuda:0``,
    read back and written through their host memory.  A subclass says how it uploads."""

    def __init__(self, name: str) -> None:
        super().__init__(SimpleNamespace(synchronize=lambda: None))
        self.name = name  # type: ignore[misc]

    @property
    def device(self) -> str:
        return "cuda:0"

    def owns(self, array: Any) -> bool:
        return isinstance(array, FakeCaiArray)

    def facts(self, array: Any) -> ArrayFacts:
        return cai_facts(array)

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array.host, copy=True)

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array.host[index] = value
