"""The device's memory-bandwidth ceiling, measured with a device-to-device copy.

GB/s alone says little; "62% of what this device can copy" says whether a
memory-bound kernel has anything left to gain.  The ceiling is measured once
per backend and device per process, with the backend's own copy and timer,
and recorded next to every result that declares its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pytest_gpucheck.bench.device_copy import device_copy
from pytest_gpucheck.bench.measure import RoundRunner, calibrate_iterations, warm_up
from pytest_gpucheck.bench.timing import timer_for

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend

CEILING_ROUNDS = 10


@dataclass(frozen=True)
class Ceiling:
    """Copy bandwidth: ``nbytes`` read and written per copy, best-round GB/s."""

    gbps: float
    nbytes: int
    method: str


_ceilings: dict[tuple[str, int, str], Ceiling] = {}


def copy_ceiling(backend: Backend, cpu_clock: str = "auto",
                 nbytes: int | None = None) -> Ceiling:
    """Measure (once per process) the copy bandwidth of ``backend``'s device.

    A copy reads and writes ``nbytes`` each, so it moves ``2 * nbytes``.  The
    fastest round is used: a ceiling is what the device *can* do.  It is timed
    like the benchmarks (``cpu_clock`` on the CPU tier).
    """
    key = (backend.name, backend.device_index, cpu_clock)
    if key not in _ceilings:
        if nbytes is None:
            nbytes = (512 if backend.is_gpu else 32) * 2**20
        count = nbytes // 4
        src = backend.to_device(np.ones(count, dtype=np.float32))
        dst = backend.empty((count,), np.float32)
        timer = timer_for(backend, cpu_clock)

        def copy() -> object:
            return device_copy(backend, src, dst)

        warm_up(timer, copy, 2)
        runner = RoundRunner(timer, copy, calibrate_iterations(timer, copy))
        for _ in range(CEILING_ROUNDS):
            runner()
        best = min(runner.samples)
        _ceilings[key] = Ceiling(gbps=2 * count * 4 / best / 1e9, nbytes=count * 4,
                                 method=timer.method)
    return _ceilings[key]
