"""NVIDIA cuda-python: ``cuda.core`` devices, buffers and NVRTC-compiled kernels.

cuda.core has no array type, so device data is a :class:`DeviceArray`: a
``cuda.core`` Buffer plus shape, dtype and strides, exposing the CUDA Array
Interface so other frameworks (and ``StridedMemoryView``) can read it.  Its
strided and transposed views are computed here from byte strides and an
offset (:meth:`DeviceArray.gpucheck_slice_view`), as are cuda-python's event
timer, device copy and MPI array operations (Numba views of the buffers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import build_mismatch, device_line, unready
from pytest_gpucheck.backends.base import Backend, BackendUnavailable, Probe
from pytest_gpucheck.backends.cuda_python.device_array import (
    DeviceArray,
    byte_c_strides,
    copy_to_device,
    copy_to_host,
    stream_handle,
)
from pytest_gpucheck.backends.numba_device.ops import NumbaOps
from pytest_gpucheck.backends.timing import CudaEventTimer

# DeviceArray and the copies live in device_array.py (the interop adapter imports them
# too); they stay importable from here.
__all__ = ["CudaPythonBackend", "DeviceArray", "byte_c_strides", "copy_to_device", "copy_to_host",
           "stream_handle"]

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.array_ops import ArrayOps
    from pytest_gpucheck.backends.timing import RoundTimer


def _cuda_core() -> Any:
    try:
        import cuda.core as core

        core.Device  # noqa: B018 - cuda.core >= 0.4 exports at top level
    except (ImportError, AttributeError):
        import cuda.core.experimental as core
    return core


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
        problem = unready("cuda.core",
                          f"cuda.core is not installed; install it with: {self.install_hint}")
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
        return DeviceArray(buffer, tuple(shape), dtype, stream=self.stream)

    def to_device(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host)
        array = self.empty(host.shape, host.dtype)
        if host.nbytes:
            copy_to_device(self.stream, array.ptr, host)
        return array

    def to_host(self, array: Any) -> np.ndarray:
        if array.strides is not None and array.strides != _c_strides(array.shape, array.dtype):
            raise ValueError("to_host takes C-contiguous cuda-python arrays")
        out = np.empty(array.shape, dtype=array.dtype)
        if out.nbytes:
            copy_to_host(self.stream, out, array.ptr)
        else:
            self.synchronize()
        return out

    def synchronize(self) -> None:
        self.stream.sync()

    def event_timer(self, clock: str) -> RoundTimer:
        return CudaCoreEventTimer(self)

    def devices(self) -> list[Any]:
        from cuda.core import system

        return list(range(system.get_num_devices()))

    def copy(self, src: Any, dst: Any) -> Any:
        from cuda.bindings import driver

        (err,) = driver.cuMemcpyDtoDAsync(dst.ptr, src.ptr, src.nbytes, self.stream.handle)
        if int(err) != 0:
            raise RuntimeError(f"cuMemcpyDtoDAsync failed: {err!r}")
        return dst

    def runtime_version(self) -> str:
        import importlib.metadata

        return importlib.metadata.version("cuda-bindings")

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.cuda_python.adapter import CudaCoreAdapter

        return CudaCoreAdapter(self)

    def mpi_ops(self) -> ArrayOps:
        """Numba's device-array operations on views of this backend's buffers.

        They run numba-cuda kernels, a dependency the probe does not need, so an
        install where numba-cuda cannot compile (numba-cuda 0.30.4 with NumPy 2.5)
        raises :class:`BackendUnavailable` with the probe's line for numba-cuda.
        """
        from pytest_gpucheck.backends.numba_device.compile_check import numba_cuda_problem

        problem = numba_cuda_problem()
        if problem:
            raise BackendUnavailable(
                f"{self.name}: its MPI operations run numba-cuda kernels, and {problem}")
        return CudaPythonOps(self)


class CudaCoreEventTimer(CudaEventTimer):
    """cuda.core events with timing enabled, recorded on the backend's stream."""

    def _new_event(self) -> Any:
        return None  # cuda.core creates the event when recording

    def _record(self, event: Any) -> Any:
        core = _cuda_core()
        try:
            options = core.EventOptions(timing_enabled=True)
        except TypeError:  # cuda.core before 0.5 named it enable_timing
            options = core.EventOptions(enable_timing=True)
        return self.backend.stream.record(options=options)  # type: ignore[attr-defined]

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        end.sync()
        # Subtracting two timed cuda.core events gives milliseconds.
        return float(end - start) / 1e3


class CudaPythonOps(NumbaOps):
    """cuda-python buffers, operated on through Numba views of their CUDA Array Interface."""

    def wrap(self, array: Any) -> Any:
        if hasattr(array, "copy_to_host"):
            return array
        return self._cuda().as_cuda_array(array)  # zero-copy; keeps ``array`` alive


def _c_strides(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    return np.empty(shape, dtype=dtype).strides if shape else ()


def _binding_major() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("cuda-bindings")
    except importlib.metadata.PackageNotFoundError:
        return None
