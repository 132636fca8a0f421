"""How one timed round is measured on each backend.

Launches on a GPU are asynchronous: timing the Python call times the launch,
not the work.  Each backend therefore gets a timer that measures the device's
work:

* CUDA backends (``cupy``, ``torch-cuda``, ``numba-cuda``, ``cuda-python``)
  record a CUDA event before and after the round on the stream the work is
  queued on and read the elapsed time between them (device time, free of host
  launch jitter);
* JAX backends time on the host until ``jax.block_until_ready`` returns for the
  round's result (JAX exposes no events; dispatch is asynchronous);
* everything else (NumPy, Numba on the CPU and the simulator, PyTorch on the
  CPU) times on the host and calls the backend's ``synchronize()`` before
  stopping the clock.

On the CPU tier the host clock is chosen per backend (``gpu_bench_cpu_clock =
auto``, the default): NumPy and the CUDA simulator, whose work runs on the
calling thread, are timed in *CPU time of the process* (``time.process_time``);
backends with thread pools (``numba-cpu`` with ``prange``, ``jax-cpu``,
``torch-cpu``) in wall time.  On a shared CI machine the wall time of a round
is mostly the neighbours: with a load of 7 on 2 cores the median of identical
windows moved by -60%..+60% in wall time and by +-7% in CPU time.  But idle
pool threads spin-wait, and spinning is CPU time (a 0.5 ms ``torch.add``
costs 5 ms of process CPU time on 2 threads), so CPU time is only honest for
single-threaded work; and it cannot see time spent waiting (sleep, I/O).
``process`` or ``wall`` force one clock for every CPU backend.  GPU backends
are never timed in CPU time.

A round runs the benchmarked callable ``iterations`` times and reports the
total; callers divide.  Framework imports happen inside the methods, so this
module imports no framework.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backends.base import Backend

#: Backends timed with CUDA events on their stream.
EVENT_TIMED_BACKENDS = ("cupy", "torch-cuda", "numba-cuda", "cuda-python")
#: Backends timed on the host up to ``block_until_ready``.
READY_TIMED_BACKENDS = ("jax-cpu", "jax-gpu")


#: Host clocks by name: wall time, or CPU time of the whole process.
HOST_CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "process": time.process_time,
}


class RoundTimer:
    """Times rounds of a callable on the host, synchronizing the backend at both ends."""

    #: How the round is bounded; with the clock it names the method in records,
    #: so a baseline is never compared with a run measured another way.
    bound = "synchronize"

    def __init__(self, backend: Backend, clock: str = "wall") -> None:
        self.backend = backend
        self.clock_name = clock
        self.clock = HOST_CLOCKS[clock]

    @property
    def min_round_seconds(self) -> float:
        """Shortest round worth timing: 2 ms, or 100 ticks of a coarse clock."""
        info = time.get_clock_info("perf_counter" if self.clock_name == "wall"
                                   else "process_time")
        return max(2e-3, 100 * info.resolution)

    @property
    def method(self) -> str:
        """``wall+synchronize``, ``process+block_until_ready``, ``cuda-events``..."""
        return f"{self.clock_name}+{self.bound}"

    def time_round(self, run: Callable[[], Any], iterations: int) -> tuple[float, Any]:
        """Seconds taken by ``iterations`` calls of ``run``, and the last result."""
        # Drain work queued before the round so it is not billed to it.
        self.backend.synchronize()
        result = None
        start = self.clock()
        for _ in range(iterations):
            result = run()
        self.backend.synchronize()
        return self.clock() - start, result


class ReadyTimer(RoundTimer):
    """JAX: host time until every result of the round is ready."""

    bound = "block_until_ready"

    def time_round(self, run: Callable[[], Any], iterations: int) -> tuple[float, Any]:
        import jax

        results = []
        start = self.clock()
        for _ in range(iterations):
            results.append(run())
        # Dispatch is asynchronous: wait for every result (a pytree is fine).
        jax.block_until_ready(results)
        return self.clock() - start, results[-1] if results else None


class CudaEventTimer(RoundTimer):
    """Device time between two CUDA events recorded on the backend's stream.

    Subclasses say how their framework creates, records and reads events.
    """

    @property
    def method(self) -> str:
        return "cuda-events"

    @property
    def min_round_seconds(self) -> float:
        return 2e-4  # events resolve about half a microsecond

    def _new_event(self) -> Any:
        raise NotImplementedError

    def _record(self, event: Any) -> Any:
        """Record ``event`` on the stream the backend's work goes to; return the event."""
        raise NotImplementedError

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        raise NotImplementedError

    def time_round(self, run: Callable[[], Any], iterations: int) -> tuple[float, Any]:
        # Without this, the start event would wait behind earlier work and the
        # round would still be correct, but an earlier host stall would not be.
        self.backend.synchronize()
        start = self._record(self._new_event())
        result = None
        for _ in range(iterations):
            result = run()
        end = self._record(self._new_event())
        return self._elapsed_seconds(start, end), result


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


class TorchEventTimer(CudaEventTimer):
    """``torch.cuda.Event(enable_timing=True)`` on the device's current stream."""

    def _new_event(self) -> Any:
        import torch

        return torch.cuda.Event(enable_timing=True)

    def _record(self, event: Any) -> Any:
        import torch

        event.record(torch.cuda.current_stream(self.backend.device_index))
        return event

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


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


class CudaCoreEventTimer(CudaEventTimer):
    """cuda.core events with timing enabled, recorded on the backend's stream."""

    def _new_event(self) -> Any:
        return None  # cuda.core creates the event when recording

    def _record(self, event: Any) -> Any:
        from ..backends.cuda_python_backend import _cuda_core

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


_EVENT_TIMERS: dict[str, type[CudaEventTimer]] = {
    "cupy": CupyEventTimer,
    "torch-cuda": TorchEventTimer,
    "numba-cuda": NumbaEventTimer,
    "cuda-python": CudaCoreEventTimer,
}


#: CPU backends whose work runs on the calling thread: CPU time is honest for them.
SINGLE_THREADED_BACKENDS = ("numpy", "numba-cudasim")
CPU_CLOCK_CHOICES = ("auto", *HOST_CLOCKS)


def host_clock_for(backend: Backend, cpu_clock: str = "auto") -> str:
    """The host clock (``wall`` or ``process``) that times ``backend``."""
    if cpu_clock not in CPU_CLOCK_CHOICES:
        raise ValueError(f"unknown CPU clock {cpu_clock!r}; use {', '.join(CPU_CLOCK_CHOICES)}")
    if backend.is_gpu:
        return "wall"
    if cpu_clock == "auto":
        return "process" if backend.name in SINGLE_THREADED_BACKENDS else "wall"
    return cpu_clock


def timer_for(backend: Backend, cpu_clock: str = "auto") -> RoundTimer:
    """The round timer that measures ``backend``'s device work.

    ``cpu_clock`` (``auto``, ``process`` or ``wall``) picks the host clock of
    CPU-tier backends; GPU backends use events, or wall time up to
    ``block_until_ready``.
    """
    clock = host_clock_for(backend, cpu_clock)
    if backend.name in _EVENT_TIMERS:
        return _EVENT_TIMERS[backend.name](backend)
    if backend.name in READY_TIMED_BACKENDS:
        return ReadyTimer(backend, clock)
    return RoundTimer(backend, clock)
