"""Warm-up, calibration and timed rounds, independent of pytest.

:class:`RoundRunner` runs one timed round per call and keeps the per-call
sample of each; the ``gpu_benchmark`` fixture hands it to pytest-benchmark's
pedantic mode together with its :class:`DeviceClock`, so pytest-benchmark's
statistics, storage and JSON hold the device times.  ``scripts/measure_gate.py``
drives the same runner directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_gpucheck.bench.device_copy import L2Flusher
from pytest_gpucheck.bench.timing import RoundTimer

MAX_ITERATIONS = 10_000
CALIBRATION_PROBES = 5


class DeviceClock:
    """A clock that advances only by measured device time.

    pytest-benchmark reads its timer before and after each round; giving it
    this clock makes the duration it records the device time of the round
    (per call), whatever host work (the L2 flush, event synchronization)
    happened around it.
    """

    def __init__(self, method: str) -> None:
        self.now = 0.0
        # pytest-benchmark stores the timer's name in its JSON "options".
        self.__name__ = f"gpucheck[{method}]"

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Reference:
    """A calibration workload timed next to every round of a benchmark.

    Whatever slows the whole machine down between two runs (another tenant's
    memory traffic, a clock change, a noisy neighbour on a shared runner) slows
    a copy of the same bytes down alike, so the ratio benchmark / reference
    cancels it while a change of the benchmark's own code moves it.
    """

    call: Callable[[], Any]
    iterations: int
    #: What it is, e.g. ``copy of 12582912 B``: stored so that only runs
    #: calibrated against the same workload are compared by ratio.
    description: str
    #: Bytes one call moves (read + written), for the copy ceiling.
    nbytes: int = 0
    samples: list[float] = field(default_factory=list)


def copy_reference(backend: Any, timer: RoundTimer, nbytes: int) -> Reference:
    """A device copy that moves ``nbytes`` (reads and writes ``nbytes / 2`` each)."""
    import numpy as np

    from pytest_gpucheck.bench.device_copy import device_copy

    count = max(int(nbytes) // 8, 1)
    src = backend.to_device(np.ones(count, dtype=np.float32))
    dst = backend.empty((count,), np.float32)

    def copy() -> Any:
        return device_copy(backend, src, dst)

    warm_up(timer, copy, 2)
    moved = 2 * count * 4
    return Reference(copy, calibrate_iterations(timer, copy), f"copy of {moved} B", moved)


@dataclass
class RoundRunner:
    """Runs timed rounds of ``call`` with ``timer`` and keeps per-call samples.

    With a ``reference``, every round also times the reference right before or
    after the benchmark (alternating, so neither always runs in the other's
    wake) and keeps its per-call sample in ``reference.samples``.
    """

    timer: RoundTimer
    call: Callable[[], Any]
    iterations: int = 1
    flusher: L2Flusher | None = None
    reference: Reference | None = None
    #: Run one untimed call before each timed round (after the flush, if any: then
    #: it is not set), so the round finds the caches as its own last call left them,
    #: whatever ran in between (the other side of an interleaved comparison).
    rewarm: bool = False
    samples: list[float] = field(default_factory=list)
    #: Host seconds per call of each round's first calls (their dispatch: the launch
    #: overhead), where the timer measures it (GPU timers); empty elsewhere.
    dispatch: list[float] = field(default_factory=list)
    #: Minor page faults per call of each timed round (:func:`minor_faults`).
    faults: list[float] = field(default_factory=list)
    clock: DeviceClock = field(init=False)

    def __post_init__(self) -> None:
        self.clock = DeviceClock(self.timer.method)

    def _time_reference(self) -> None:
        reference = self.reference
        if reference is not None:
            elapsed, _ = self.timer.time_round(reference.call, reference.iterations)
            reference.samples.append(elapsed / reference.iterations)

    def __call__(self) -> Any:
        """One timed round; returns the callable's last result."""
        reference_first = len(self.samples) % 2 == 0
        if reference_first:
            self._time_reference()
        if self.flusher is not None:
            self.flusher.flush()
        elif self.rewarm:
            self.timer.time_round(self.call, 1)
        self.timer.dispatch_per_call = None
        faults = minor_faults()
        elapsed, result = self.timer.time_round(self.call, self.iterations)
        self.faults.append((minor_faults() - faults) / self.iterations)
        # Read before the reference's round, which sets the timer's figure anew.
        if self.timer.dispatch_per_call is not None:
            self.dispatch.append(self.timer.dispatch_per_call)
        if not reference_first:
            self._time_reference()
        per_call = elapsed / self.iterations
        self.samples.append(per_call)
        self.clock.advance(per_call)
        return result


def warm_up(timer: RoundTimer, call: Callable[[], Any], warmup_rounds: int) -> float:
    """Run the first call (JIT compilation, first touch) and ``warmup_rounds`` more.

    Returns the first call's time, which the record keeps as the compile cost so
    that it never lands in a timed round.
    """
    first, _ = timer.time_round(call, 1)
    for _ in range(warmup_rounds):
        timer.time_round(call, 1)
    return first


def calibrate_iterations(timer: RoundTimer, call: Callable[[], Any],
                         minimum: float = 0.0) -> int:
    """Calls per round so that a round lasts at least the timer's useful minimum (or
    ``minimum`` seconds, when longer).

    Calibration uses the fastest of a few probes: one probe hit by a neighbour's
    burst would otherwise pick one call per round for a kernel that needs many.
    The timer's minimum is read after the probes: on a GPU it grows with the
    dispatch they measured (a round must amortise one call's dispatch).
    """
    single = min(timer.time_round(call, 1)[0] for _ in range(CALIBRATION_PROBES))
    floor = max(minimum, timer.min_round_seconds)
    if single >= floor:
        return 1
    # Re-measure over several calls: one call of a tiny kernel is mostly overhead.
    probe = min(max(int(floor / max(single, 1e-7)) // 4, 2), MAX_ITERATIONS)
    elapsed = min(timer.time_round(call, probe)[0] for _ in range(CALIBRATION_PROBES))
    # On a GPU the probe's first dispatch is in its time (the device starts idle): not a
    # call's device time, so it is taken out of the estimate.
    per_call = max((elapsed - (timer.dispatch_per_call or 0.0)) / probe, 1e-9)
    # The probes over several calls measured dispatch over more calls: they decide.
    floor = max(minimum, timer.min_round_seconds)
    return int(min(max(math.ceil(floor / per_call), 1), MAX_ITERATIONS))


def minor_faults() -> int:
    """This process's minor page faults so far (0 where ``resource`` is missing).

    Counted around each timed round, on both sides of a comparison: a host array that
    is a fresh mapping on every call faults its pages in on first touch, on every call
    (every array of 128 KiB or more with the mmap threshold fixed, as under
    ``--gpu-bench-against``: bench/interleave.py), and that time is part of what the
    rounds measure; an in-process run that reuses heap pages pays none of it."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
