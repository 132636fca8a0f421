"""NVIDIA cuda-python: ``cuda.core`` devices, buffers and NVRTC-compiled kernels.

cuda.core has no array type, so device data is a :class:`DeviceArray`: a
``cuda.core`` Buffer plus shape, dtype and strides, exposing the CUDA Array
Interface so other frameworks (and ``StridedMemoryView``) can read it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._cuda_build import build_mismatch, device_line, driver_problem
from .base import Backend, Probe


def _cuda_core() -> Any:
    try:
        import cuda.core as core

        core.Device  # noqa: B018 - cuda.core >= 0.4 exports at top level
    except (ImportError, AttributeError):
        import cuda.core.experimental as core
    return core


@dataclass
class DeviceArray:
    """A typed, shaped view of a ``cuda.core`` Buffer (what cuda-python kernels take)."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None = None  # bytes; None means C-contiguous
    offset: int = 0  # bytes from the start of the buffer

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle) + self.offset

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": self.strides,
            "version": 3,
            "stream": None,
        }


class CudaPythonBackend(Backend):
    """CUDA C kernels compiled with NVRTC and launched through ``cuda.core``."""

    name = "cuda-python"
    tier = "gpu"
    distribution = "cuda-core"
    install_hint = "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])"

    def __init__(self, device_index: int = 0) -> None:
        super().__init__(device_index)
        self._device: Any = None
        self._stream: Any = None

    def _probe(self) -> Probe:
        if importlib.util.find_spec("cuda.core") is None:
            return Probe.missing(
                f"cuda.core is not installed; install it with: {self.install_hint}"
            )
        problem = driver_problem()
        if problem:
            return Probe.missing(problem)
        # cuda-bindings N.x is built against CUDA N and needs a driver for N.
        version = _binding_major()
        mismatch = build_mismatch("cuda-bindings", version, "cuda-bindings {major}.x")
        if mismatch:
            return Probe.missing(mismatch)
        self.device.set_current()
        return Probe(True, version=self.version(), device=device_line(self.device_index))

    @property
    def device(self) -> Any:
        """The ``cuda.core`` Device this backend runs on (made current on first use)."""
        if self._device is None:
            self._device = _cuda_core().Device(self.device_index)
            self._device.set_current()
        return self._device

    @property
    def stream(self) -> Any:
        """The stream kernels are launched on and copies are ordered by."""
        if self._stream is None:
            self._stream = self.device.create_stream()
        return self._stream

    def empty(self, shape: tuple[int, ...], dtype: Any) -> DeviceArray:
        dtype = np.dtype(dtype)
        nbytes = max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1)
        buffer = self.device.allocate(nbytes, stream=self.stream)
        return DeviceArray(buffer, tuple(shape), dtype)

    def to_device(self, host: np.ndarray) -> DeviceArray:
        from cuda.bindings import driver

        host = np.ascontiguousarray(host)
        array = self.empty(host.shape, host.dtype)
        if host.nbytes:
            self.stream.sync()
            (err,) = driver.cuMemcpyHtoD(array.ptr, host.ctypes.data, host.nbytes)
            _check(err)
        return array

    def to_host(self, array: Any) -> np.ndarray:
        from cuda.bindings import driver

        self.synchronize()
        if array.strides is not None and array.strides != _c_strides(array.shape, array.dtype):
            raise ValueError("to_host takes C-contiguous cuda-python arrays")
        out = np.empty(array.shape, dtype=array.dtype)
        if out.nbytes:
            (err,) = driver.cuMemcpyDtoH(out.ctypes.data, array.ptr, out.nbytes)
            _check(err)
        return out

    def synchronize(self) -> None:
        self.stream.sync()


def _c_strides(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    return np.empty(shape, dtype=dtype).strides if shape else ()


def _binding_major() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("cuda-bindings")
    except importlib.metadata.PackageNotFoundError:
        return None


def _check(err: Any) -> None:
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver call failed: {err!r}")
