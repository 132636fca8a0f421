"""Timing in the test's own process: pytest-benchmark's own loop over the rounds, the
rounds the noise needs for the gate's power added after it; the :class:`~.timed.Timing`
of a plain run, and of a benchmark that the baseline checkout does not have."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pytest_gpucheck.bench.gate import planned_rounds
from pytest_gpucheck.bench.measure import RoundRunner, copy_reference
from pytest_gpucheck.bench.timed import Prepared, Timed, Timing, process_ceiling

if TYPE_CHECKING:
    from pytest_gpucheck.bench.fixture import GpuBenchmark


class InProcess(Timing):
    """Time the rounds here, with pytest-benchmark's own loop (the planned rounds
    added after it)."""

    round_seconds = 0.0

    def time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed:
        timer, rounds, flusher = prepared.timer, prepared.rounds, prepared.flusher
        # A benchmark that declares its bytes is paired, round by round, with a
        # device copy of as many bytes: the gate compares the ratios, so a
        # machine-wide slowdown between baseline and run cancels, and the copy's
        # fastest round is the bandwidth ceiling at this size (same cache regime).
        reference = copy_reference(bench.backend, timer, int(bench.bytes)) \
            if bench.bytes and flusher is None else None
        runner = RoundRunner(timer, prepared.call, prepared.iterations, flusher, reference)
        # pytest-benchmark reads this clock around each round: it sees device time.
        bench.benchmark._timer = runner.clock
        result = bench.benchmark.pedantic(runner, rounds=rounds, iterations=1, warmup_rounds=0)
        if bench.benchmark.disabled:
            # pytest-benchmark switches itself off under pytest-xdist and ran one
            # round above; the gate and the baselines still need every round.
            for _ in range(rounds - 1):
                result = runner()
        # Noisy rounds need more of them for the gate to catch its design slowdown
        # (10% by default) with its power (90%): the first rounds' noise decides how
        # many, up to max_rounds.  pytest-benchmark's table holds the first ``rounds``
        # only; the record, the baseline and the gate hold every round.
        # The plan is made twice: the second time from every round of the first
        # extension, whose noise estimate is the better one.
        max_rounds = int(bench.run.measure.get("max_rounds") or bench.defaults.max_rounds)
        for _ in range(2):
            planned = planned_rounds(runner.samples, reference.samples if reference else [],
                                     bench.settings, rounds, max_rounds, prepared.baseline)
            for _ in range(planned - len(runner.samples)):
                result = runner()
        if reference is not None and reference.samples:
            ceiling: tuple[float, int] | None = (
                reference.nbytes / min(reference.samples) / 1e9, reference.nbytes)
        else:
            ceiling = process_ceiling(bench) if bench.bytes else None
        # Page faults per call: a stored comparison names them where the two sides
        # differ (bench/gate/format.py: a mode or allocator change shows up here first).
        faults = {"page_faults_per_call": float(np.median(runner.faults))} \
            if runner.faults else {}
        return Timed(list(runner.samples), result, ceiling, flusher is not None, faults,
                     reference.description if reference is not None else "",
                     list(reference.samples) if reference is not None else [],
                     list(runner.dispatch))
