"""CuPy on a CUDA device (and its CUDA event timer); the interop adapter is in :mod:`.adapter`."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import build_mismatch, device_line, unready
from pytest_gpucheck.backends.base import Backend, PeerCopy, Probe
from pytest_gpucheck.backends.timing import CudaEventTimer

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.timing import RoundTimer


class CupyBackend(Backend):
    """CuPy arrays, ``ElementwiseKernel``/``ReductionKernel``/``RawKernel`` on a GPU."""

    name = "cupy"
    tier = "gpu"
    distribution = "cupy"
    install_hint = "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])"

    def version(self) -> str:
        import importlib.metadata

        for dist in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return ""

    def _probe(self) -> Probe:
        problem = unready("cupy", f"cupy is not installed; install it with: {self.install_hint}")
        if problem:
            return Probe.missing(problem)
        cupy = self._import("cupy")
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        build = f"{runtime // 1000}.{runtime % 1000 // 10}"
        mismatch = build_mismatch("cupy", build, "cupy-cuda{major}x")
        if mismatch:
            return Probe.missing(mismatch)
        cupy.cuda.Device(self.device_index).use()
        return Probe(True, version=cupy.__version__, device=device_line(self.device_index))

    @property
    def module(self) -> Any:
        import cupy

        return cupy

    def to_device(self, host: np.ndarray) -> Any:
        import cupy

        with cupy.cuda.Device(self.device_index):
            return cupy.asarray(host)

    def to_host(self, array: Any) -> np.ndarray:
        import cupy

        return cupy.asnumpy(array)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        import cupy

        with cupy.cuda.Device(self.device_index):
            return cupy.empty(shape, dtype=dtype)

    def xp_device(self) -> Any:
        # CuPy creates arrays on its current device, which need not be this backend's.
        import cupy

        return cupy.cuda.Device(self.device_index)

    def xp_device_context(self) -> Callable[[], AbstractContextManager[Any]]:
        # array-api-compat's CuPy wrapper ignores device= in ones() and the like (its
        # _check_device validates NumPy's and Dask's only) and refuses one in
        # fft.fftfreq: the creation functions run with this device current instead.
        import cupy

        return functools.partial(cupy.cuda.Device, self.device_index)

    def synchronize(self) -> None:
        import cupy

        cupy.cuda.Device(self.device_index).synchronize()

    def event_timer(self, clock: str) -> RoundTimer:
        return CupyEventTimer(self)

    def devices(self) -> list[Any]:
        import cupy

        return [cupy.cuda.Device(i) for i in range(cupy.cuda.runtime.getDeviceCount())]

    def copy(self, src: Any, dst: Any) -> Any:
        import cupy

        cupy.copyto(dst, src)
        return dst

    def runtime_version(self) -> str:
        import cupy

        version = int(cupy.cuda.runtime.runtimeGetVersion())
        return f"{version // 1000}.{version % 1000 // 10}"

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.cupy.adapter import CupyAdapter

        return CupyAdapter(self)

    def peer_copy(self) -> PeerCopy:
        from pytest_gpucheck.backends.cupy.peer_copy import CupyPeerCopy

        return CupyPeerCopy()


class CupyEventTimer(CudaEventTimer):
    """``cupy.cuda.Event`` on CuPy's current stream."""

    def _new_event(self) -> Any:
        import cupy

        return cupy.cuda.Event()

    def _record(self, event: Any) -> Any:
        import cupy

        event.record(cupy.cuda.get_current_stream())
        return event

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        import cupy

        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end)) / 1e3
