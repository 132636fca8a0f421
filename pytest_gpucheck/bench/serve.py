"""Timing for the lead (``--gpu-bench-against`` and the stored gate's fresh processes):
in a process the lead started (``--gpu-bench-peer``), the benchmark times one round
each time the lead asks, with the lead's calls per round, and hands the test the
kernel's result only; the lead makes the record.  The :class:`~.timed.Timing` of a
peer; the protocol is :class:`~.interleave.PeerServer`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_gpucheck.bench.measure import RoundRunner, calibrate_iterations
from pytest_gpucheck.bench.timed import Prepared, Timed, Timing

if TYPE_CHECKING:
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.interleave import PeerServer


class ForTheLead(Timing):
    """Serve the lead's rounds through ``server`` (see the module's docstring)."""

    round_seconds = 0.0

    def __init__(self, server: PeerServer) -> None:
        self.server = server

    def calls_per_round(self, timer: Any, call: Callable[[], Any], asked: int | None) -> int:
        # The lead calibrated its calls per round (and sends the count); each side runs
        # the calibration's calls too, so both enter their rounds equally warm.  Not
        # where the test fixed its calls per round: the lead did not calibrate then.
        if asked is None:
            calibrate_iterations(timer, call)
        return self.server.iterations

    def time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed:
        timer, flusher = prepared.timer, prepared.flusher
        runner = RoundRunner(timer, prepared.call, prepared.iterations, flusher, rewarm=True)
        last: list[Any] = []

        def time_round() -> float:
            last[:] = [runner()]
            return runner.samples[-1]

        self.server.serve({"environment": prepared.environment.as_dict(),
                           "method": timer.method, "warmup_rounds": prepared.warmup,
                           "first_call_seconds": prepared.first_call,
                           "l2_flushed": flusher is not None}, time_round)
        # Kept until the lead's "release": the next replicate's arrays then land on other
        # memory pages, not on the ones this replicate just freed.  Not on a GPU: six
        # copies of a benchmark's device arrays may not fit, so there each run's arrays
        # are freed before the next (the framework's pool may hand the same blocks out).
        if not bench.backend.is_gpu:
            self.server.kept.append(runner)
        result = last[0] if last else prepared.call()
        return Timed(list(runner.samples), result, l2_flushed=flusher is not None,
                     record=False)
