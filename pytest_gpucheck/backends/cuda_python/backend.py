"""NVIDIA cuda-python: ``cuda.core`` devices, buffers and NVRTC-compiled kernels.

cuda.core has no array type, so device data is a :class:`DeviceArray`: a
``cuda.core`` Buffer plus shape, dtype and strides, exposing the CUDA Array
Interface so other frameworks (and ``StridedMemoryView``) can read it.  Its
strided and transposed views are computed here from byte strides and an
offset (:meth:`DeviceArray.gpucheck_slice_view`), as are cuda-python's event
timer, device copy and MPI array operations (Numba views of the buffers).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import build_mismatch, device_line, unready
from pytest_gpucheck.backends.base import Backend, BackendUnavailable, Probe
from pytest_gpucheck.backends.numba.backend import NumbaOps
from pytest_gpucheck.backends.timing import CudaEventTimer

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


@dataclass
class DeviceArray:
    """A typed, shaped view of a ``cuda.core`` Buffer (what cuda-python kernels take)."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None = None  # bytes; None means C-contiguous
    offset: int = 0  # bytes from the start of the buffer
    #: The ``cuda.core`` Stream the data is written on (None: synchronized, no stream).
    stream: Any = None

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
    def readonly(self) -> bool:
        """False: kernels write these arrays (a read-only variant overrides it)."""
        return False

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CAI v3 with the producing stream, so a consumer orders its work after ours.

        A size-0 array's data pointer is 0, as the interface asks: the address of an
        empty view at an offset lies outside any allocation, and cuda.core's
        ``StridedMemoryView`` asks the driver which device holds a non-zero pointer
        (``CUDA_ERROR_INVALID_VALUE`` on an H200, 2026-11-27).
        """
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr if self.size else 0, self.readonly),
            "strides": self.strides,
            "version": 3,
            "stream": stream_handle(self.stream),
        }

    # The view protocol of pytest_gpucheck.checking.device_views: a bare buffer has no
    # slicing of its own, so views are computed from byte strides and an offset.
    @property
    def gpucheck_byte_strides(self) -> tuple[int, ...]:
        """Byte strides, C-order ones spelt out where :attr:`strides` is None."""
        return self.strides or byte_c_strides(self.shape, self.dtype.itemsize)

    def gpucheck_slice_view(self, index: tuple[slice, ...]) -> DeviceArray:
        """``self[index]`` for slices with positive steps, as a view of the same buffer."""
        strides = self.gpucheck_byte_strides
        offset = self.offset
        shape: list[int] = []
        new_strides: list[int] = []
        for axis, extent in enumerate(self.shape):
            part = index[axis] if axis < len(index) else slice(None)
            start, stop, step = part.indices(extent)
            if step <= 0:
                raise ValueError("slice_view takes positive steps only")
            shape.append(len(range(start, stop, step)))
            new_strides.append(strides[axis] * step)
            offset += start * strides[axis]
        contiguous = tuple(new_strides) == byte_c_strides(tuple(shape), self.dtype.itemsize)
        # replace() keeps the class (a read-only variant stays read-only) and
        # the stream the data was written on.
        return dataclasses.replace(self, shape=tuple(shape),
                                   strides=None if contiguous else tuple(new_strides),
                                   offset=offset)

    def gpucheck_transpose_view(self) -> DeviceArray:
        """The transpose of a 2-D array, as a view of the same buffer."""
        return dataclasses.replace(self, shape=tuple(reversed(self.shape)),
                                   strides=tuple(reversed(self.gpucheck_byte_strides)))


def byte_c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def stream_handle(stream: Any) -> int | None:
    """The CAI v3 ``stream`` value of a ``cuda.core`` Stream (None for no stream).

    v3 forbids 0: the legacy default stream is spelt 1.
    """
    if stream is None:
        return None
    handle = int(stream.handle)
    return handle if handle else 1


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
        from pytest_gpucheck.backends.numba.compile_check import numba_cuda_problem

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


def copy_to_device(stream: Any, address: int, host: np.ndarray) -> None:
    """Copy the contiguous ``host`` to device ``address`` on ``stream``, and wait for it.

    The copy is queued on the stream the kernels run on: cuda.core streams are
    non-blocking (``StreamOptions.nonblocking=True``), so they do not wait for a
    copy on the legacy default stream (plain ``cuMemcpyHtoD``), and a kernel
    could read the buffer before the copy landed.  Waiting afterwards keeps
    ``host`` (pageable, possibly a temporary) alive until the driver is done.
    """
    from cuda.bindings import driver

    (err,) = driver.cuMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes, stream.handle)
    _check(err)
    stream.sync()


def copy_to_host(stream: Any, host: np.ndarray, address: int) -> None:
    """Copy ``host.nbytes`` from device ``address`` into the contiguous ``host``, on ``stream``.

    Queued after the stream's kernels, then waited for, so ``host`` holds their result.
    """
    from cuda.bindings import driver

    (err,) = driver.cuMemcpyDtoHAsync(host.ctypes.data, address, host.nbytes, stream.handle)
    _check(err)
    stream.sync()


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
