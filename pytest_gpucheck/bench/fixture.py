"""The ``gpu_benchmark`` fixture object: pytest-benchmark, timed on the device.

It drives pytest-benchmark's own ``benchmark`` fixture in pedantic mode with a
:class:`~pytest_gpucheck.bench.measure.DeviceClock` as its timer, so
pytest-benchmark's table, ``--benchmark-*`` options, storage and JSON all
hold the device times; the device facts and derived figures go to its
``extra_info`` under ``"gpucheck"``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from pytest_gpucheck.bench.device_copy import L2Flusher, default_flush_bytes
from pytest_gpucheck.bench.environment import Environment, describe
from pytest_gpucheck.bench.gate import GateSettings, planned_rounds
from pytest_gpucheck.bench.interleave import PeerServer
from pytest_gpucheck.bench.measure import (
    RoundRunner,
    calibrate_iterations,
    copy_reference,
    warm_up,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.settings import (
    MEASURE_KEYS,
    SETTING_NAMES,
)
from pytest_gpucheck.bench.timed import (
    MeasureDefaults,
    Prepared,
    Timed,
    Timing,
    next_look_fits,
    process_ceiling,
)
from pytest_gpucheck.bench.timing import timer_for

#: Named here too: the session and the tests import them from the fixture's module.
__all__ = ["GpuBenchmark", "MeasureDefaults", "Prepared", "Timed", "Timing", "marker_settings",
           "next_look_fits"]

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend
    from pytest_gpucheck.bench.baseline import BaselineStore
    from pytest_gpucheck.bench.run import GateRun



class GpuBenchmark:
    """Benchmark a callable on a backend, timing the device's work.

    Call it like pytest-benchmark's fixture, ``gpu_benchmark(fn, *args,
    **kwargs)``, or use :meth:`pedantic` to declare bytes and flops and to set
    rounds, iterations, warm-up and the L2 flush.  Attributes ``bytes``,
    ``flops`` and ``l2_flush`` may also be set before the call.
    """

    def __init__(
        self,
        benchmark: Any,
        backend: Backend,
        run: GateRun,
        defaults: MeasureDefaults,
        store: BaselineStore | None,
        disabled_by_user: bool = False,
        *,
        timing: Timing | None = None,
        peer_server: PeerServer | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.backend = backend
        #: This benchmark's way through the gate: its settings, level and destinations.
        self.run = run
        self.name = run.name
        self.bytes: int | None = run.measure.get("bytes")
        self.flops: int | None = run.measure.get("flops")
        self.l2_flush: bool = bool(run.measure.get("l2_flush", defaults.l2_flush))
        self.defaults = defaults
        self._store = store
        self._disabled_by_user = disabled_by_user
        #: The gate settings of this benchmark: they decide how many rounds it needs.
        self.settings: GateSettings = run.settings
        #: Free-form facts stored with the record (e.g. which implementation ran).
        self.extra: dict[str, Any] = {}
        self.record: BenchmarkRecord | None = None
        #: Timed away from this process (None: here).
        self._timing = timing
        #: Set in the baseline checkout's own process: it times rounds when told to.
        self._peer_server = peer_server
        self._environment: Environment | None = None

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Benchmark ``fn(*args, **kwargs)``; return its result."""
        return self.pedantic(fn, args=args, kwargs=kwargs)

    def pedantic(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        bytes: int | None = None,
        flops: int | None = None,
        l2_flush: bool | None = None,
        rounds: int | None = None,
        iterations: int | None = None,
        warmup_rounds: int | None = None,
    ) -> Any:
        """Benchmark ``fn`` with explicit settings; return its result.

        ``bytes``/``flops`` are per call and give GB/s, GFLOP/s and the fraction
        of the measured copy ceiling.  ``iterations`` (calls per timed round) is
        calibrated when not given, or reused from the baseline so the two are
        measured alike.
        """
        kwargs = dict(kwargs or {})
        marker = self.run.measure
        self.bytes = bytes if bytes is not None else self.bytes
        self.flops = flops if flops is not None else self.flops
        flush = self.l2_flush if l2_flush is None else l2_flush
        rounds = int(rounds or marker.get("rounds") or self.defaults.rounds)
        rounds = max(rounds, int(getattr(self.benchmark, "_min_rounds", 1) or 1))
        warmup = int(warmup_rounds if warmup_rounds is not None else marker.get(
            "warmup_rounds", self.defaults.warmup_rounds))

        # A partial, not a closure of this module: the rounds call the kernel from the
        # timing modules without coming back into the fixture's file.
        call: Callable[[], Any] = functools.partial(fn, *args, **kwargs)

        if self._disabled_by_user:
            # --benchmark-disable: run once, as pytest-benchmark does, but synchronized.
            result = self.benchmark.pedantic(call)
            self.backend.synchronize()
            return result

        timer = timer_for(self.backend, self.defaults.cpu_clock)
        environment = self._environment = describe(self.backend)
        first_call = warm_up(timer, call, warmup)
        flusher = (L2Flusher(self.backend, default_flush_bytes(self.backend)) if flush else None)
        if self._peer_server is not None:
            return self._serve_as_baseline(timer, call, flusher, environment.as_dict(),
                                           first_call, warmup)
        iterations = iterations or marker.get("iterations") or self._baseline_iterations(
            environment.device_model) or calibrate_iterations(
                timer, call, self._timing.round_seconds if self._timing is not None else 0.0)
        prepared = Prepared(call, int(iterations), rounds, warmup, first_call, timer)
        timed = self._timing.time(self, prepared) if self._timing is not None else None
        if timed is None:
            timed = self._in_process(prepared, flusher)
        self._keep(prepared, timed)
        return timed.result

    def _in_process(self, prepared: Prepared, flusher: L2Flusher | None) -> Timed:
        """Time the rounds here, with pytest-benchmark's own loop (the planned rounds
        added after it)."""
        timer, rounds = prepared.timer, prepared.rounds
        # A benchmark that declares its bytes is paired, round by round, with a
        # device copy of as many bytes: the gate compares the ratios, so a
        # machine-wide slowdown between baseline and run cancels, and the copy's
        # fastest round is the bandwidth ceiling at this size (same cache regime).
        reference = copy_reference(self.backend, timer, int(self.bytes)) \
            if self.bytes and flusher is None else None
        runner = RoundRunner(timer, prepared.call, prepared.iterations, flusher, reference)
        # pytest-benchmark reads this clock around each round: it sees device time.
        self.benchmark._timer = runner.clock
        result = self.benchmark.pedantic(runner, rounds=rounds, iterations=1, warmup_rounds=0)
        if self.benchmark.disabled:
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
        max_rounds = int(self.run.measure.get("max_rounds") or self.defaults.max_rounds)
        assert self._environment is not None
        baseline = self._baseline(self._environment.device_model)
        for _ in range(2):
            planned = planned_rounds(runner.samples, reference.samples if reference else [],
                                     self.settings, rounds, max_rounds, baseline)
            for _ in range(planned - len(runner.samples)):
                result = runner()
        if reference is not None and reference.samples:
            ceiling: tuple[float, int] | None = (
                reference.nbytes / min(reference.samples) / 1e9, reference.nbytes)
        else:
            ceiling = process_ceiling(self) if self.bytes else None
        # Page faults per call: a stored comparison names them where the two sides
        # differ (bench/gate/format.py: a mode or allocator change shows up here first).
        faults = {"page_faults_per_call": float(np.median(runner.faults))} \
            if runner.faults else {}
        return Timed(list(runner.samples), result, ceiling, flusher is not None, faults,
                     reference.description if reference is not None else "",
                     list(reference.samples) if reference is not None else [],
                     list(runner.dispatch))

    def _serve_as_baseline(self, timer: Any, call: Callable[[], Any], flusher: L2Flusher | None,
                           environment: dict[str, str], first_call: float, warmup: int) -> Any:
        """In the baseline checkout's process: time one round each time the lead asks."""
        assert self._peer_server is not None
        # The lead calibrated its calls per round (and sends the count); the baseline
        # runs the same calls, so both sides enter their rounds equally warm.
        calibrate_iterations(timer, call)
        runner = RoundRunner(timer, call, self._peer_server.iterations, flusher, rewarm=True)
        last: list[Any] = []

        def time_round() -> float:
            last[:] = [runner()]
            return runner.samples[-1]

        self._peer_server.serve({"environment": environment, "method": timer.method,
                                 "warmup_rounds": warmup, "first_call_seconds": first_call,
                                 "l2_flushed": flusher is not None}, time_round)
        # Kept until the lead's "release": the next replicate's arrays then land on other
        # memory pages, not on the ones this replicate just freed.  Not on a GPU: six
        # copies of a benchmark's device arrays may not fit, so there each run's arrays
        # are freed before the next (the framework's pool may hand the same blocks out).
        if not self.backend.is_gpu:
            self._peer_server.kept.append(runner)
        return last[0] if last else call()

    def _keep(self, prepared: Prepared, timed: Timed) -> None:
        """Make this run's record (every timing mode's, here) and hand it on."""
        assert self._environment is not None
        ceiling = timed.ceiling
        self.record = BenchmarkRecord(
            name=self.name, environment=self._environment,
            method=timed.method or prepared.timer.method,
            samples=list(timed.samples), iterations=prepared.iterations,
            warmup_rounds=prepared.warmup, first_call_seconds=prepared.first_call,
            l2_flushed=timed.l2_flushed, bytes=self.bytes, flops=self.flops,
            ceiling_gbps=ceiling[0] if ceiling else None,
            ceiling_bytes=ceiling[1] if ceiling else None,
            extra={**self.extra, **timed.extra}, reference=timed.reference,
            reference_samples=list(timed.reference_samples),
            dispatch_samples=list(timed.dispatch_samples))
        self.benchmark.extra_info["gpucheck"] = _extra_info(self.record)
        self.run.keep(self.record)

    def _baseline(self, device_model: str) -> BenchmarkRecord | None:
        """The record this run will be compared with (only when comparing)."""
        if self._store is None:
            return None
        return self._store.baseline(self.name, device_model, self.backend.name)

    def _baseline_iterations(self, device_model: str) -> int | None:
        baseline = self._baseline(device_model)
        return baseline.iterations if baseline is not None else None


def _extra_info(record: BenchmarkRecord) -> dict[str, Any]:
    """What pytest-benchmark's JSON gets: everything but the samples it already has."""
    info = record.as_dict()
    info.pop("samples")
    info.pop("name")
    return info


def marker_settings(item: pytest.Item) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split the ``gpu_bench`` marker's keywords into (measurement, gate) settings."""
    marker = item.get_closest_marker("gpu_bench")
    if marker is None:
        return {}, {}
    if marker.args:
        pytest.fail(f"@pytest.mark.gpu_bench takes keywords only, got {marker.args!r}",
                    pytrace=False)
    unknown = set(marker.kwargs) - set(MEASURE_KEYS) - set(SETTING_NAMES)
    if unknown:
        pytest.fail(f"@pytest.mark.gpu_bench: unknown keyword(s) {', '.join(sorted(unknown))}; "
                    f"valid: {', '.join(MEASURE_KEYS + SETTING_NAMES)}", pytrace=False)
    measure = {k: v for k, v in marker.kwargs.items() if k in MEASURE_KEYS}
    gate = {k: v for k, v in marker.kwargs.items() if k in SETTING_NAMES}
    return measure, gate
