"""Round timers: how one timed round of a benchmark is bounded on a backend.

The generic timers live here; each framework's backend returns the one that
measures its device's work from :meth:`~.base.Backend.event_timer` (CUDA
events in ``backends/<framework>/backend.py``, JAX's ``block_until_ready``
timer in ``backends/jax/backend.py``).  :mod:`pytest_gpucheck.bench.timing`
chooses the host clock and asks the backend for its timer.  Framework imports
happen inside the methods, so this module imports no framework.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Backend

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


class CudaEventTimer(RoundTimer):
    """Device time between two CUDA events recorded on the backend's stream.

    Subclasses (one per CUDA framework, beside its backend) say how their
    framework creates, records and reads events.
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
