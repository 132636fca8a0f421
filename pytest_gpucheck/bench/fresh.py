"""Timing in fresh processes (``--gpu-bench-save`` / ``--gpu-bench-compare``): each of
``gpu_bench_processes`` fresh pytest processes in this checkout times the benchmark in
turn, and one summary per process is kept (:mod:`.stored`, the stored gate's
evidence); the :class:`~.fixture.Timing` of the stored gate."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pytest

from pytest_gpucheck.bench.paired import start_replicate
from pytest_gpucheck.bench.peers import PeerError, stopped_by_sigterm
from pytest_gpucheck.bench.settings import MIN_ROUNDS_PER_PROCESS
from pytest_gpucheck.bench.timed import (
    Prepared,
    Timed,
    Timing,
    copy_ceiling_at_size,
    replay_and_call,
)

if TYPE_CHECKING:
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.run import GateRun


class InFreshProcesses(Timing):
    """Time the benchmark in each fresh process in turn (``rounds`` in all, at least
    :data:`MIN_ROUNDS_PER_PROCESS` each) and keep one summary per process."""

    round_seconds = 0.0

    def __init__(self, run: GateRun) -> None:
        self.run = run

    def time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed | None:
        with stopped_by_sigterm():
            return self._time(bench, prepared)

    def _time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed | None:
        from pytest_gpucheck.bench.stored import SUMMARIES, process_summary

        try:
            peers = self.run.fresh()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        per = max(math.ceil(prepared.rounds / len(peers)), MIN_ROUNDS_PER_PROCESS)
        samples: list[float] = []
        summaries: list[float] = []
        faults: list[float] = []
        methods: set[str] = set()
        try:
            for peer in peers:
                facts = start_replicate(self.run, peer, prepared.iterations, "candidate")
                methods.add(str((facts or {}).get("method", prepared.timer.method)))
                own = [peer.round() for _ in range(per)]
                faults += peer.faults[-per:]
                outcome, message = peer.end()
                if outcome not in ("passed", "was skipped"):
                    pytest.fail(f"gpucheck benchmark gate: this test {outcome} in a fresh "
                                f"process: {message}", pytrace=False)
                samples += own
                summaries.append(process_summary(own, bench.settings))
            for peer in peers:
                peer.release()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        result = replay_and_call(bench, samples, prepared)
        ceiling = copy_ceiling_at_size(bench, prepared.timer)
        bench.extra[SUMMARIES] = summaries
        bench.extra["processes"] = len(peers)
        bench.extra["page_faults_per_call"] = float(np.median(faults))
        # The processes share one clock rule and environment: one method.
        assert len(methods) == 1, methods
        return Timed(samples, result, ceiling, method=methods.pop())
