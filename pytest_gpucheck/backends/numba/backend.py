"""Numba on three targets: ``@njit`` on the CPU, ``@cuda.jit`` on a GPU, and the
CUDA simulator.

Numba decides between the real CUDA target and the simulator when
``numba.cuda`` is first imported (``NUMBA_ENABLE_CUDASIM``), so the two cannot
share a process.  The plugin runs simulator items in a child process of their
own (:mod:`pytest_gpucheck.processes.routers.simulator`); in the parent, ``numba-cudasim`` is
probed without importing ``numba.cuda``.

Numba's event timer is here too; the MPI array operations on its device arrays
(:class:`~pytest_gpucheck.backends.numba_device.ops.NumbaOps`, shared with cuda-python)
live in ``backends/numba_device/``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import device_line, unready
from pytest_gpucheck.backends.array_ops import ArrayOps
from pytest_gpucheck.backends.base import Backend, Probe
from pytest_gpucheck.backends.host_arrays import HostArrays
from pytest_gpucheck.backends.numba_device.compile_check import (
    compile_problem,
    one_element_kernel_problem,
)
from pytest_gpucheck.backends.numba_device.ops import NumbaOps, whole
from pytest_gpucheck.backends.timing import CudaEventTimer
from pytest_gpucheck.environment import SIMULATOR_CHILD_VARIABLE

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.timing import RoundTimer

__all__ = ["SIMULATOR_CHILD_VARIABLE", "NumbaCpuBackend", "NumbaCudaBackend", "NumbaCudasimBackend"]


def simulator_requested() -> bool:
    """True where ``numba.cuda`` will be (or is) the simulator in this process."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


class NumbaCpuBackend(HostArrays):
    """``@numba.njit`` (and ``prange``) kernels on NumPy arrays."""

    name = "numba-cpu"
    tier = "cpu"
    distribution = "numba"
    single_threaded_in_one_thread_pools = True
    install_hint = "pip install 'pytest-gpucheck[cpu]'"
    # @njit code indexes without bounds checks (unless boundscheck=True): an out-of-bounds
    # write corrupts the heap or kills the process with SIGSEGV.
    unchecked_host_code = True

    def _probe(self) -> Probe:
        numba = self._import("numba")
        return Probe(True, version=numba.__version__, device="cpu")

    def thread_counts(self) -> tuple[int, ...]:
        """Numba's whole pool, then one thread (which cannot race), where the pool has
        more than one: kernels compiled with ``parallel=True`` split their ``prange``
        loops over it."""
        import numba

        most = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        return (most, 1) if most > 1 else (1,)

    @contextlib.contextmanager
    def using_threads(self, count: int) -> Iterator[None]:
        """``numba.set_num_threads(count)`` for the enclosed calls (it applies to the
        calling thread), then the count before."""
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(count)
        try:
            yield
        finally:
            numba.set_num_threads(before)

    def threads_overlap(self) -> bool | None:
        """Eight calls in a row of a ``prange`` loop that adds 65537 ones into ``out[0]``
        from every thread: a total short of 65537 means two threads ran at once."""
        probe = _overlap_probe()
        ones = np.ones(65537, dtype=np.int64)
        totals = np.zeros(8, dtype=np.int64)
        for index in range(totals.size):
            probe(ones, totals[index:index + 1])
        return bool(np.any(totals != ones.size))

    def race_scan(self) -> Any:
        """Reads the ``prange`` loops of the ``parallel=True`` functions compiled while it
        is active (:class:`~.race_check.LoopScan`): a race found there does not depend on
        the threads overlapping in this run."""
        from pytest_gpucheck.backends.numba.race_check import LoopScan

        # The overlap probe races on purpose, and it is compiled during the item.
        return LoopScan(ignored=(_overlap_probe(),))


@functools.cache
def _overlap_probe() -> Any:
    """The racing probe of :meth:`NumbaCpuBackend.threads_overlap` (compiled on first use)."""
    import numba

    def racing_count(ones: Any, out: Any) -> None:
        for i in numba.prange(ones.shape[0]):
            out[0] += ones[i]  # a race on purpose: lost updates show that threads overlapped

    return numba.njit(parallel=True, cache=True)(racing_count)


class _NumbaCudaArrays(Backend):
    """Device-array operations shared by the real CUDA target and the simulator."""

    distribution = "numba-cuda"
    install_hint = "pip install 'pytest-gpucheck[cpu]'"

    def _cuda(self) -> Any:
        from numba import cuda

        return cuda

    def to_device(self, host: np.ndarray) -> Any:
        return self._cuda().to_device(np.ascontiguousarray(host))

    def to_host(self, array: Any) -> np.ndarray:
        self.synchronize()
        if isinstance(array, np.ndarray):
            return array.copy()
        if array.is_c_contiguous() or array.is_f_contiguous():
            return array.copy_to_host()
        # A strided view: gather it on the device first, then copy.  Index with
        # a tuple of full slices: numba-cuda's DeviceNDArray has no Ellipsis
        # (dummyarray's Dim.__getitem__ computes `... + 1`, a TypeError).
        source = array
        if not _numba_types(array.dtype):
            # Numba's assignment kernel cannot be typed for void / bfloat16
            # (what a '<V2' CUDA Array Interface imports as): move the bytes
            # through an unsigned integer view of the same item size.
            source = array.view(np.dtype(f"u{array.dtype.itemsize}"))
        dense = self._cuda().device_array(source.shape, dtype=source.dtype)
        dense[whole(dense)] = source
        return np.asarray(dense.copy_to_host()).view(array.dtype)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._cuda().device_array(shape, dtype=dtype)

    def synchronize(self) -> None:
        self._cuda().synchronize()

    def version(self) -> str:
        return super().version() or _numba_version()

    def copy(self, src: Any, dst: Any) -> Any:
        # A device array source makes this a device-to-device copy.
        dst.copy_to_device(src)
        return dst

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.numba.adapter import NumbaCudaAdapter

        return NumbaCudaAdapter(self)

    def mpi_ops(self) -> ArrayOps:
        return NumbaOps(self)


def _numba_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return ""


class NumbaCudaBackend(_NumbaCudaArrays):
    """``@cuda.jit`` kernels on a real CUDA device."""

    name = "numba-cuda"
    tier = "gpu"
    install_hint = "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])"

    def _probe(self) -> Probe:
        if simulator_requested():
            return Probe.missing(
                "NUMBA_ENABLE_CUDASIM is set, so numba.cuda is the simulator "
                "in this process; use the numba-cudasim backend"
            )
        problem = unready("numba", f"numba is not installed; install it with: {self.install_hint}")
        if problem:
            return Probe.missing(problem)
        cuda = self._cuda()
        # Before the device: an install whose first compile fails (numba-cuda 0.30.4 with
        # NumPy 2.5) is one probe line, not a column of failed kernels.
        broken = compile_problem()
        if broken:
            return Probe.missing(broken)
        nvvm = nvvm_problem()
        if nvvm:
            return Probe.missing(f"{nvvm}; install {self.install_hint}")
        if not cuda.is_available():
            return Probe.missing(
                "numba.cuda.is_available() is False (no usable CUDA toolkit "
                f"or device); install {self.install_hint}"
            )
        cuda.select_device(self.device_index)
        broken = one_element_kernel_problem(cuda)
        if broken:
            return Probe.missing(broken)
        return Probe(True, version=self.version(), device=device_line(self.device_index))

    def event_timer(self, clock: str) -> RoundTimer:
        return NumbaEventTimer(self)

    def devices(self) -> list[Any]:
        return list(self._cuda().gpus)

    def runtime_version(self) -> str:
        return ".".join(str(part) for part in self._cuda().runtime.get_version())


def nvvm_problem() -> str | None:
    """Why libNVVM (numba-cuda's compiler, from the ``cu12``/``cu13`` extra) cannot load.

    Without it every ``@cuda.jit`` launch fails at compile time, so the probe says
    so instead.  Recent numba-cuda's ``cuda.is_available()`` includes this check
    but only answers False; older ones do not check at all.
    """
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception as exc:  # NvvmSupportError, or an import failure of the binding
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"libNVVM cannot be loaded ({type(exc).__name__}: {first})"
    return None


class NumbaCudasimBackend(_NumbaCudaArrays):
    """``@cuda.jit`` kernels on Numba's CUDA simulator (one Python thread per CUDA thread).

    Runs in a child process of its own; see :mod:`pytest_gpucheck.processes.routers.simulator`.
    """

    name = "numba-cudasim"
    tier = "cpu"
    is_simulator = True
    single_threaded = True  # simulated threads take turns on the calling thread

    def _probe(self) -> Probe:
        if importlib.util.find_spec("numba") is None:
            return Probe.missing(f"numba is not installed; install it with: {self.install_hint}")
        if importlib.util.find_spec("numba.cuda") is None:
            return Probe.missing(f"numba.cuda is missing; install it with: {self.install_hint}")
        if simulator_requested() and not _config_says_simulator():
            return Probe.missing(
                "numba.cuda was imported before NUMBA_ENABLE_CUDASIM was "
                "set, so this process cannot use the simulator"
            )
        if simulator_requested():  # grid.sync() over several blocks fails, not passes by luck
            from pytest_gpucheck.backends.numba.simulator_guard import install

            install()
        return Probe(True, version=self.version(), device="CUDA simulator (cpu)")


def _config_says_simulator() -> bool:
    import numba

    return bool(getattr(numba.config, "ENABLE_CUDASIM", False))


class NumbaEventTimer(CudaEventTimer):
    """``numba.cuda.event(timing=True)`` on the default stream, where un-streamed launches go."""

    def _new_event(self) -> Any:
        from numba import cuda

        return cuda.event(timing=True)  # type: ignore[call-arg]  # the simulator's stub differs

    def _record(self, event: Any) -> Any:
        from numba import cuda

        event.record(stream=cuda.default_stream())
        return event

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


def _numba_types(dtype: Any) -> bool:
    """True when Numba can type ``dtype`` (not for void, bfloat16 or other extension dtypes)."""
    from numba.np.numpy_support import from_dtype

    try:
        from_dtype(np.dtype(dtype))
    except Exception:  # NumbaNotImplementedError and its kin
        return False
    return True
