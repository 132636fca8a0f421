"""The ``gpu_benchmark`` fixture object: pytest-benchmark, timed on the device.

It drives pytest-benchmark's own ``benchmark`` fixture in pedantic mode with a
:class:`~pytest_gpucheck.bench.measure.DeviceClock` as its timer, so
pytest-benchmark's table, ``--benchmark-*`` options, storage and JSON all
hold the device times; the device facts and derived figures go to its
``extra_info`` under ``"gpucheck"``.  It prepares the call; how the rounds are timed
is its mode's (:class:`~.timed.Timing`, a module each, chosen once by the fixture's
factory in ``bench/plugin.py``); the record is made here, by one path (``_keep``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.bench.device_copy import L2Flusher, default_flush_bytes
from pytest_gpucheck.bench.environment import describe
from pytest_gpucheck.bench.gate import GateSettings
from pytest_gpucheck.bench.in_process import InProcess
from pytest_gpucheck.bench.measure import warm_up
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
)
from pytest_gpucheck.bench.timing import timer_for

#: Named here too: the session and the tests import them from the fixture's module.
__all__ = ["GpuBenchmark", "MeasureDefaults", "Prepared", "Timed", "Timing", "marker_settings",
           "next_look_fits"]

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend
    from pytest_gpucheck.bench.run import GateRun



class GpuBenchmark:
    """Benchmark a callable on a backend, timing the device's work.

    Call it like pytest-benchmark's fixture, ``gpu_benchmark(fn, *args,
    **kwargs)``, or use :meth:`pedantic` to declare bytes and flops and to set
    rounds, iterations, warm-up and the L2 flush.  Attributes ``bytes``,
    ``flops`` and ``l2_flush`` may also be set before the call.
    """

    def __init__(self, benchmark: Any, backend: Backend, run: GateRun,
                 timing: Timing | None) -> None:
        self.benchmark = benchmark
        self.backend = backend
        #: This benchmark's way through the gate: its settings, level and destinations.
        self.run = run
        self.name = run.name
        #: Run-wide measurement settings (ini and command line).
        self.defaults: MeasureDefaults = run.session.measure
        self.bytes: int | None = run.measure.get("bytes")
        self.flops: int | None = run.measure.get("flops")
        self.l2_flush: bool = bool(run.measure.get("l2_flush", self.defaults.l2_flush))
        #: The gate settings of this benchmark: they decide how many rounds it needs.
        self.settings: GateSettings = run.settings
        #: Free-form facts stored with the record (e.g. which implementation ran).
        self.extra: dict[str, Any] = {}
        self.record: BenchmarkRecord | None = None
        #: How its rounds are timed, chosen once (bench/plugin.py); None under
        #: ``--benchmark-disable``: the kernel runs once, untimed.
        self._timing = timing

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

        if self._timing is None:
            # --benchmark-disable: run once, as pytest-benchmark does, but synchronized.
            result = self.benchmark.pedantic(call)
            self.backend.synchronize()
            return result

        timer = timer_for(self.backend, self.defaults.cpu_clock)
        environment = describe(self.backend)
        first_call = warm_up(timer, call, warmup)
        flusher = (L2Flusher(self.backend, default_flush_bytes(self.backend)) if flush else None)
        baseline = self._baseline(environment.device_model)
        asked = iterations or marker.get("iterations") or (
            baseline.iterations if baseline is not None else None)
        prepared = Prepared(call, self._timing.calls_per_round(timer, call, asked), rounds,
                            warmup, first_call, timer, environment, flusher, baseline)
        try:
            timed = self._timing.time(self, prepared)
        except (KeyboardInterrupt, pytest.exit.Exception):
            # The run was stopped in the middle of this benchmark: without this,
            # pytest-benchmark's teardown adds that its fixture "was not used at all".
            self.benchmark.skipped = True
            raise
        if timed is None:
            # Nothing to time against (the baseline checkout has no such test): here.
            timed = InProcess().time(self, prepared)
        if timed.record:
            self._keep(prepared, timed)
        return timed.result

    def _keep(self, prepared: Prepared, timed: Timed) -> None:
        """Make this run's record (every timing mode's, here) and hand it on."""
        ceiling = timed.ceiling
        self.record = BenchmarkRecord(
            name=self.name, environment=prepared.environment,
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
        session = self.run.session
        if not session.compare:
            return None
        return session.store.baseline(self.name, device_model, self.backend.name)


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
