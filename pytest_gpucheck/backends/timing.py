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
    from pytest_gpucheck.backends.base import Backend

#: A round of a device timer lasts at least this many times one call's host dispatch.
#: The device is idle when the round's start event is recorded (the round begins
#: synchronized), so the first call's dispatch lands between the events; later calls
#: queue behind running work when each call's device time exceeds its dispatch.  A
#: round of 100 dispatches' length bills at most 1% of it to that first dispatch.
DISPATCH_AMORTISATION = 100
#: Calls whose host time measures dispatch per call: the first ones of a round, before
#: a long round could fill the driver's launch queue and make the host wait on the
#: device (that wait is not dispatch).
DISPATCH_PROBE_CALLS = 16

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
        #: Host seconds per call that the last round's first calls took to return
        #: (their dispatch), on timers of asynchronous devices; ``None`` elsewhere.
        self.dispatch_per_call: float | None = None

    def _dispatch_floor(self) -> float:
        """Shortest round that amortises one call's dispatch (0 before any is measured)."""
        return DISPATCH_AMORTISATION * (self.dispatch_per_call or 0.0)

    def _calls(self, run: Callable[[], Any], iterations: int,
               results: list[Any] | None = None) -> Any:
        """Call ``run`` ``iterations`` times (appending each result to ``results`` when
        given); keep the host time per call of the first :data:`DISPATCH_PROBE_CALLS`
        in :attr:`dispatch_per_call`; return the last result."""
        probe = min(iterations, DISPATCH_PROBE_CALLS)
        result = None
        start = self.clock()
        for index in range(iterations):
            if index == probe:
                self.dispatch_per_call = (self.clock() - start) / probe
            result = run()
            if results is not None:
                results.append(result)
        if probe == iterations and probe:
            self.dispatch_per_call = (self.clock() - start) / probe
        return result

    @property
    def min_round_seconds(self) -> float:
        """Shortest round worth timing: 2 ms, or 100 ticks of a coarse clock."""
        info = time.get_clock_info("perf_counter" if self.clock_name == "wall"
                                   else "process_time")
        return max(2e-3, 100 * info.resolution, self._dispatch_floor())

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

    What lands between the events is the round's device work plus the gaps in
    which the device waited for the host: the first call's dispatch (the round
    starts on an idle device), and every call's dispatch when a call's dispatch
    takes longer than its device work.  So a round times ``k`` back-to-back calls
    and its length is at least :data:`DISPATCH_AMORTISATION` times one call's
    dispatch (:attr:`min_round_seconds`, used by the calibration): the first
    dispatch is then at most 1% of the round.  The host time of the first calls
    is kept as :attr:`dispatch_per_call` (the launch overhead), and a record
    whose device time per call is not clearly above it is named dispatch-bound
    (``BenchmarkRecord.dispatch_bound``): there the events time the host.

    Subclasses (one per CUDA framework, beside its backend) say how their
    framework creates, records and reads events.
    """

    @property
    def method(self) -> str:
        return "cuda-events"

    @property
    def min_round_seconds(self) -> float:
        # Events resolve about half a microsecond; one call's dispatch must be amortised.
        return max(2e-4, self._dispatch_floor())

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
        result = self._calls(run, iterations)
        end = self._record(self._new_event())
        return self._elapsed_seconds(start, end), result
