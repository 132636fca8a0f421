"""The ``gpu_benchmark`` fixture object: pytest-benchmark, timed on the device.

It drives pytest-benchmark's own ``benchmark`` fixture in pedantic mode with a
:class:`~pytest_gpucheck.bench.measure.DeviceClock` as its timer, so
pytest-benchmark's table, ``--benchmark-*`` options, storage and JSON all
hold the device times; the device facts and derived figures go to its
``extra_info`` under ``"gpucheck"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from .ceiling import copy_ceiling
from .device_copy import L2Flusher, default_flush_bytes
from .environment import describe
from .gate import GateSettings, planned_rounds
from .measure import RoundRunner, calibrate_iterations, copy_reference, warm_up
from .records import BenchmarkRecord
from .settings import (
    DEFAULT_MAX_ROUNDS,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP_ROUNDS,
    MEASURE_KEYS,
    SETTING_NAMES,
)
from .timing import timer_for

if TYPE_CHECKING:
    from ..backends.base import Backend
    from .baseline import BaselineStore



@dataclass
class MeasureDefaults:
    """Run-wide measurement settings (ini and command line)."""

    rounds: int = DEFAULT_ROUNDS
    #: Cap on the rounds added when the noise needs more for the gate's power.
    max_rounds: int = DEFAULT_MAX_ROUNDS
    warmup_rounds: int = DEFAULT_WARMUP_ROUNDS
    l2_flush: bool = False
    cpu_clock: str = "auto"


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
        name: str,
        defaults: MeasureDefaults,
        marker_kwargs: dict[str, Any],
        store: BaselineStore | None,
        on_record: Callable[[BenchmarkRecord], None],
        disabled_by_user: bool = False,
        gate: GateSettings | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.backend = backend
        self.name = name
        self.bytes: int | None = marker_kwargs.get("bytes")
        self.flops: int | None = marker_kwargs.get("flops")
        self.l2_flush: bool = bool(marker_kwargs.get("l2_flush", defaults.l2_flush))
        self._defaults = defaults
        self._marker = marker_kwargs
        self._store = store
        self._on_record = on_record
        self._disabled_by_user = disabled_by_user
        #: The gate settings of this benchmark: they decide how many rounds it needs.
        self._gate = gate or GateSettings()
        #: Free-form facts stored with the record (e.g. which implementation ran).
        self.extra: dict[str, Any] = {}
        self.record: BenchmarkRecord | None = None

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
        self.bytes = bytes if bytes is not None else self.bytes
        self.flops = flops if flops is not None else self.flops
        flush = self.l2_flush if l2_flush is None else l2_flush
        rounds = int(rounds or self._marker.get("rounds") or self._defaults.rounds)
        rounds = max(rounds, int(getattr(self.benchmark, "_min_rounds", 1) or 1))
        warmup = warmup_rounds if warmup_rounds is not None else self._marker.get(
            "warmup_rounds", self._defaults.warmup_rounds)

        def call() -> Any:
            return fn(*args, **kwargs)

        if self._disabled_by_user:
            # --benchmark-disable: run once, as pytest-benchmark does, but synchronized.
            result = self.benchmark.pedantic(call)
            self.backend.synchronize()
            return result

        timer = timer_for(self.backend, self._defaults.cpu_clock)
        environment = describe(self.backend)
        first_call = warm_up(timer, call, int(warmup))
        iterations = iterations or self._marker.get("iterations") or self._baseline_iterations(
            environment.device_model) or calibrate_iterations(timer, call)
        flusher = (L2Flusher(self.backend, default_flush_bytes(self.backend)) if flush else None)
        # A benchmark that declares its bytes is paired, round by round, with a
        # device copy of as many bytes: the gate compares the ratios, so a
        # machine-wide slowdown between baseline and run cancels, and the copy's
        # fastest round is the bandwidth ceiling at this size (same cache regime).
        reference = copy_reference(self.backend, timer, int(self.bytes)) \
            if self.bytes and flusher is None else None
        runner = RoundRunner(timer, call, int(iterations), flusher, reference)
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
        max_rounds = int(self._marker.get("max_rounds") or self._defaults.max_rounds)
        baseline = self._baseline(environment.device_model)
        for _ in range(2):
            planned = planned_rounds(runner.samples, reference.samples if reference else [],
                                     self._gate, rounds, max_rounds, baseline)
            for _ in range(planned - len(runner.samples)):
                result = runner()
        if reference is not None and reference.samples:
            ceiling: float | None = reference.nbytes / min(reference.samples) / 1e9
        else:
            ceiling = copy_ceiling(self.backend, self._defaults.cpu_clock).gbps \
                if self.bytes else None
        self.record = BenchmarkRecord(
            name=self.name,
            environment=environment,
            method=timer.method,
            samples=list(runner.samples),
            iterations=int(iterations),
            warmup_rounds=int(warmup),
            first_call_seconds=first_call,
            l2_flushed=flusher is not None,
            bytes=self.bytes,
            flops=self.flops,
            ceiling_gbps=ceiling,
            extra=dict(self.extra),
            reference=reference.description if reference is not None else "",
            reference_samples=list(reference.samples) if reference is not None else [],
        )
        self.benchmark.extra_info["gpucheck"] = _extra_info(self.record)
        self._on_record(self.record)
        return result

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
