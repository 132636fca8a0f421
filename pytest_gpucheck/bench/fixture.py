"""The ``gpu_benchmark`` fixture object: pytest-benchmark, timed on the device.

It drives pytest-benchmark's own ``benchmark`` fixture in pedantic mode with a
:class:`~pytest_gpucheck.bench.measure.DeviceClock` as its timer, so
pytest-benchmark's table, ``--benchmark-*`` options, storage and JSON all
hold the device times; the device facts and derived figures go to its
``extra_info`` under ``"gpucheck"``.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from pytest_gpucheck.bench.ceiling import copy_ceiling
from pytest_gpucheck.bench.device_copy import L2Flusher, default_flush_bytes
from pytest_gpucheck.bench.environment import Environment, describe, environment_from_dict
from pytest_gpucheck.bench.gate import GateSettings, pair_figures_of, planned_rounds
from pytest_gpucheck.bench.interleave import (
    SIDES,
    BaselinePeer,
    PeerError,
    PeerServer,
    PinPlan,
    first_side,
    pinning_words,
    shared_cpu,
    time_pair,
)
from pytest_gpucheck.bench.measure import (
    DeviceClock,
    RoundRunner,
    calibrate_iterations,
    copy_reference,
    warm_up,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.sequential import LookSchedule
from pytest_gpucheck.bench.settings import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_PROCESSES,
    DEFAULT_REPLICATES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP_ROUNDS,
    MEASURE_KEYS,
    MIN_BLOCKS_PER_PAIR,
    MIN_ROUNDS_PER_PROCESS,
    SETTING_NAMES,
)
from pytest_gpucheck.bench.timing import timer_for

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend
    from pytest_gpucheck.bench.baseline import BaselineStore



#: Shortest round of an interleaved comparison (``--gpu-bench-against``).  Handing the
#: CPU (or the GPU) to the other side costs the next round some time (caches, TLBs,
#: the clock's ramp refill), and the two sides need not pay it alike; a round of many
#: calls, after an untimed one (``rewarm``), makes that cost small against the round.
INTERLEAVED_ROUND_SECONDS = 0.01
#: What the interleaved timing returns when the baseline has no such benchmark.
NO_BASELINE = object()


@dataclass
class MeasureDefaults:
    """Run-wide measurement settings (ini and command line)."""

    rounds: int = DEFAULT_ROUNDS
    #: Cap on the rounds added when the noise needs more for the gate's power.
    max_rounds: int = DEFAULT_MAX_ROUNDS
    warmup_rounds: int = DEFAULT_WARMUP_ROUNDS
    l2_flush: bool = False
    cpu_clock: str = "auto"
    #: ``--gpu-bench-against``: runs of each benchmark's test per side.
    replicates: int = DEFAULT_REPLICATES
    #: ``--gpu-bench-save`` / ``--gpu-bench-compare``: fresh processes per benchmark.
    processes: int = DEFAULT_PROCESSES
    #: ``--gpu-bench-against``: seconds a benchmark may take to decide, more pairs
    #: added while it cannot (:mod:`.sequential`).
    budget: float = DEFAULT_BUDGET
    #: ``--gpu-bench-against``: how the measured processes' CPUs and thread pools are
    #: held (``split`` or ``off``) and the plan it made (:func:`~.interleave.pinning_plan`;
    #: ``None`` when off or not Linux).
    pin: str = ""
    pin_plan: PinPlan | None = None
    #: ``--gpu-bench-against``: the seed of the processes' random placement offsets.
    placement_seed: int | None = None
    #: ``--gpu-bench-against``: seconds each pair of processes took to start (and collect)
    #: in this run, for the budget's projection of a look that needs new ones.
    started_pairs: list[float] = field(default_factory=list)
    noted_pairs: set[int] = field(default_factory=set)

    def start_per_pair(self) -> float:
        """Seconds a new pair of processes is expected to take to start: the slowest
        seen so far in this run (0 before any)."""
        return max(self.started_pairs, default=0.0)


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
        against: Callable[[int], list[tuple[BaselinePeer, BaselinePeer]]] | None = None,
        on_baseline: Callable[[BenchmarkRecord | str], None] | None = None,
        peer_server: PeerServer | None = None,
        progress: Callable[..., None] | None = None,
        processes: Callable[[], list[BaselinePeer]] | None = None,
        decide: Callable[[list[float], float], bool] | None = None,
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
        #: ``--gpu-bench-against``: the baseline checkout's process, and where its
        #: record (or why there is none) goes.
        self._against = against
        self._on_baseline = on_baseline
        #: Set in the baseline checkout's own process: it times rounds when told to.
        self._peer_server = peer_server
        #: ``--gpu-bench-against``: told after each pair of processes (pairs done, pairs,
        #: the rounds of each side so far, rounds per pair), for the progress line.
        self._progress = progress
        #: ``--gpu-bench-save`` / ``--gpu-bench-compare``: the fresh processes that time
        #: this benchmark (bench/stored.py).
        self._processes = processes
        #: ``--gpu-bench-against``: whether a look at these pair figures, spending this
        #: share of the benchmark's level, decides (:func:`~.gate.look_decides`).
        self._decide = decide
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
        environment = self._environment = describe(self.backend)
        first_call = warm_up(timer, call, int(warmup))
        flusher = (L2Flusher(self.backend, default_flush_bytes(self.backend)) if flush else None)
        if self._peer_server is not None:
            return self._serve_as_baseline(timer, call, flusher, environment.as_dict(),
                                           first_call, int(warmup))
        iterations = iterations or self._marker.get("iterations") or self._baseline_iterations(
            environment.device_model) or calibrate_iterations(
                timer, call, INTERLEAVED_ROUND_SECONDS if self._against is not None else 0.0)
        max_rounds = int(self._marker.get("max_rounds") or self._defaults.max_rounds)
        if self._against is not None:
            result = self._interleaved(call, int(iterations), rounds, int(warmup), first_call,
                                       timer)
            # A kernel may return None (in-place kernels do): only the sentinel means
            # that the baseline has no such benchmark.
            if result is not NO_BASELINE:
                return result
        if self._processes is not None:
            return self._in_processes(call, int(iterations), rounds, int(warmup), first_call,
                                      timer)
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
        baseline = self._baseline(environment.device_model)
        for _ in range(2):
            planned = planned_rounds(runner.samples, reference.samples if reference else [],
                                     self._gate, rounds, max_rounds, baseline)
            for _ in range(planned - len(runner.samples)):
                result = runner()
        if reference is not None and reference.samples:
            ceiling: tuple[float, int] | None = (
                reference.nbytes / min(reference.samples) / 1e9, reference.nbytes)
        else:
            ceiling = self._process_ceiling() if self.bytes else None
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
            ceiling_gbps=ceiling[0] if ceiling else None,
            ceiling_bytes=ceiling[1] if ceiling else None,
            # Page faults per call: a stored comparison names them where the two sides
            # differ (bench/gate.py: a mode or allocator change shows up here first).
            extra={**self.extra, **({"page_faults_per_call": float(np.median(runner.faults))}
                                    if runner.faults else {})},
            reference=reference.description if reference is not None else "",
            reference_samples=list(reference.samples) if reference is not None else [],
            dispatch_samples=list(runner.dispatch),
        )
        self.benchmark.extra_info["gpucheck"] = _extra_info(self.record)
        self._on_record(self.record)
        return result

    # -- --gpu-bench-against: the baseline checkout timed beside this run --------------
    def _start_replicate(self, peer: BaselinePeer, iterations: int,
                         side: str) -> dict[str, Any] | None:
        """Ask ``peer`` to run this test up to its benchmark: its facts when ready, else
        ``None`` (the baseline's reason went to ``on_baseline``).  A process that cannot
        start or died, a candidate that cannot time its own test, and a baseline that
        imported the candidate's code fail the test: no verdict is possible."""
        assert self._on_baseline is not None
        try:
            start = peer.begin(self.name, iterations)
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        if not start.ready:
            if side == "candidate":
                pytest.fail(f"gpucheck benchmark gate: the candidate process could not time "
                            f"this test: {start.reason}", pytrace=False)
            self._on_baseline(start.reason)
            return None
        foreign = start.facts.get("foreign_modules") or []
        if foreign:
            names = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
            pytest.fail(
                f"gpucheck benchmark gate: the baseline process in {peer.checkout} imported "
                f"{names} from this checkout ({peer.rootdir}), so it would time this run's "
                "code against itself; make the checkout import its own code (pytest ini "
                "'pythonpath = src' for a src layout, or no editable install of the project)",
                pytrace=False)
        return start.facts

    def _interleaved(self, call: Callable[[], Any], iterations: int, rounds: int,
                     warmup: int, first_call: float, timer: Any) -> Any:
        """Time the baseline checkout and this checkout in processes of their own, in
        turns, one round each, in ``replicates`` runs of the test; the kernel's result,
        or :data:`NO_BASELINE` when the baseline has no such benchmark (then this process
        times it alone)."""
        assert self._against is not None
        assert self._on_baseline is not None
        replicates = self._defaults.replicates
        # Whole blocks (two pairs of rounds) per pair of processes, ``rounds`` per side
        # in all: the pairs are the evidence (their number decides the interval), the
        # blocks only make each pair's figure steadier.
        per = 2 * max(math.ceil(rounds / (2 * replicates)), MIN_BLOCKS_PER_PAIR)
        schedule = LookSchedule.for_pairs(replicates)
        base_samples: list[float] = []
        cand_samples: list[float] = []
        # Minor page faults per call of each side's rounds (bench/interleave.py).
        faults: dict[str, list[float]] = {"baseline": [], "candidate": []}
        facts: dict[str, Any] = {}
        looks: list[int] = []
        stopped = "decided"
        started_at = time.monotonic()
        done = 0
        base = cand = None
        # Seconds spent starting processes within this benchmark: not part of the pace
        # of its pairs, but part of what a later look that needs new ones costs.
        starting = 0.0
        try:
            began = time.monotonic()
            pairs = self._against(replicates)
            starting += self._note_start(began, pairs)
            while True:
                target = schedule.pairs_at(len(looks) + 1)
                if target > len(pairs):
                    began = time.monotonic()
                    pairs = self._against(target)
                    starting += self._note_start(began, pairs)
                while done < target:
                    base, cand = pairs[done]
                    # The side that starts this pair sets up its test first (and times
                    # the first round of each block): each side in every other pair.
                    starts = {"baseline": base, "candidate": cand}
                    begun: dict[str, dict[str, Any] | None] = {}
                    for side in SIDES if first_side(done) == SIDES[0] else SIDES[::-1]:
                        begun[side] = self._start_replicate(starts[side], iterations, side)
                        if begun[side] is None:
                            break
                    if begun.get("baseline") is None:
                        if begun.get("candidate") is not None:
                            # It started first (an odd pair) and waits for its rounds.
                            cand.end()
                        if done:
                            pytest.fail(f"gpucheck benchmark gate: the baseline timed this "
                                        f"test {done} time(s), then not: {base.checkout}",
                                        pytrace=False)
                        return NO_BASELINE
                    facts = dict(begun["baseline"] or {})
                    self._time_pair(base, cand, done, per, base_samples, cand_samples, faults)
                    outcome, message = base.end()
                    cand_outcome, cand_message = cand.end()
                    if cand_outcome not in ("passed", "was skipped"):
                        pytest.fail(f"gpucheck benchmark gate: this test {cand_outcome} in "
                                    f"the candidate process: {cand_message}", pytrace=False)
                    done += 1
                    if self._progress is not None:
                        self._progress(done, target, base_samples, cand_samples, per,
                                       schedule.share(len(looks) + 1))
                looks.append(done)
                if self._decide is None or self._decide(
                        pair_figures_of(base_samples, cand_samples, per),
                        schedule.share(len(looks))):
                    stopped = "decided"
                    break
                if len(looks) >= schedule.looks:
                    stopped = "last look"
                    break
                # The next look fits the budget when its pairs, at the pace so far, do,
                # with the start-up of the processes it needs that are not running yet
                # (a look's pairs used to start after the projection: 144 s and 174 s
                # for a 120 s budget, issue 43).
                missing = max(schedule.pairs_at(len(looks) + 1) - len(pairs), 0)
                if not next_look_fits(time.monotonic() - started_at, starting, done,
                                      schedule.step, missing,
                                      self._defaults.start_per_pair(), self._defaults.budget):
                    stopped = "budget"
                    break
            for pair in pairs:
                for peer in pair:
                    peer.release()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        assert base is not None
        # pytest-benchmark's table and JSON get the candidate's rounds, replayed.
        clock = DeviceClock(timer.method)
        replay = iter(cand_samples)

        def replayed() -> None:
            clock.advance(next(replay))

        self.benchmark._timer = clock
        self.benchmark.pedantic(replayed, rounds=len(cand_samples), iterations=1,
                                warmup_rounds=0)
        result = call()
        self.backend.synchronize()
        ceiling = self._copy_ceiling_at_size(timer) if self.bytes else None
        self.extra["replicates"] = done
        # How the pairs were judged (bench/sequential.py) and how the processes were
        # held: the verdict prints both.
        sequential = {"looks": looks, "stopped": stopped, "schedule": schedule.as_dict(),
                      "budget": self._defaults.budget}
        self.extra["sequential"] = sequential
        if self._defaults.pin:
            self.extra["pinning"] = pinning_words(self._defaults.pin_plan, self._defaults.pin,
                                                  self.backend)
        if self._defaults.placement_seed is not None:
            self.extra["placement_seed"] = self._defaults.placement_seed
        self.extra["page_faults_per_call"] = float(np.median(faults["candidate"]))
        self._keep(cand_samples, timer.method, iterations, warmup, first_call, None, ceiling)
        self._on_baseline(BenchmarkRecord(
            name=self.name, environment=environment_from_dict(dict(facts["environment"])),
            method=str(facts["method"]), samples=base_samples, iterations=iterations,
            warmup_rounds=int(facts["warmup_rounds"]),
            first_call_seconds=float(facts["first_call_seconds"]),
            l2_flushed=bool(facts["l2_flushed"]), bytes=self.bytes, flops=self.flops,
            extra={"checkout": str(base.checkout), "outcome": outcome, "message": message,
                   "replicates": done, "sequential": sequential,
                   "page_faults_per_call": float(np.median(faults["baseline"]))}))
        return result

    def _note_start(self, began: float, pairs: list[tuple[BaselinePeer, BaselinePeer]]
                    ) -> float:
        """Seconds since ``began`` when some of ``pairs`` were started since (their
        start-up, kept per pair for the budget's projections), else 0."""
        new = [pair for pair in pairs if id(pair[0]) not in self._defaults.noted_pairs]
        if not new:
            return 0.0
        seconds = time.monotonic() - began
        self._defaults.noted_pairs |= {id(pair[0]) for pair in new}
        self._defaults.started_pairs += [seconds / len(new)] * len(new)
        return seconds

    def _in_processes(self, call: Callable[[], Any], iterations: int, rounds: int,
                      warmup: int, first_call: float, timer: Any) -> Any:
        """Time this benchmark in each fresh process in turn (``rounds`` in all, at least
        :data:`MIN_ROUNDS_PER_PROCESS` each) and keep one summary per process
        (:mod:`.stored`): the stored gate's evidence."""
        from pytest_gpucheck.bench.stored import SUMMARIES, process_summary

        assert self._processes is not None
        try:
            peers = self._processes()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        per = max(math.ceil(rounds / len(peers)), MIN_ROUNDS_PER_PROCESS)
        samples: list[float] = []
        summaries: list[float] = []
        faults: list[float] = []
        try:
            for peer in peers:
                self._start_replicate(peer, iterations, "candidate")
                own = [peer.round() for _ in range(per)]
                faults += peer.faults[-per:]
                outcome, message = peer.end()
                if outcome not in ("passed", "was skipped"):
                    pytest.fail(f"gpucheck benchmark gate: this test {outcome} in a fresh "
                                f"process: {message}", pytrace=False)
                samples += own
                summaries.append(process_summary(own, self._gate))
            for peer in peers:
                peer.release()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        # pytest-benchmark's table and JSON get the processes' rounds, replayed.
        clock = DeviceClock(timer.method)
        replay = iter(samples)

        def replayed() -> None:
            clock.advance(next(replay))

        self.benchmark._timer = clock
        self.benchmark.pedantic(replayed, rounds=len(samples), iterations=1, warmup_rounds=0)
        result = call()
        self.backend.synchronize()
        ceiling = self._copy_ceiling_at_size(timer) if self.bytes else None
        self.extra[SUMMARIES] = summaries
        self.extra["processes"] = len(peers)
        self.extra["page_faults_per_call"] = float(np.median(faults))
        self._keep(samples, timer.method, iterations, warmup, first_call, None, ceiling)
        return result

    def _time_pair(self, base: BaselinePeer, cand: BaselinePeer, pair: int, per: int,
                   base_samples: list[float], cand_samples: list[float],
                   faults: dict[str, list[float]]) -> None:
        """Time ``per`` rounds of each side of pair ``pair``'s processes, in the pair's
        balanced order (:func:`~.interleave.pair_rounds`: an untimed round per side, then
        blocks of first, second, second, first)."""
        # --gpu-bench-pin=off leaves the processes' CPUs as they are, this one included.
        held = shared_cpu(self.backend, (base.pid, cand.pid)) \
            if self._defaults.pin != "off" else contextlib.nullcontext()
        with held:
            base_rounds, cand_rounds = time_pair(base, cand, pair, per)
        base_samples += base_rounds
        cand_samples += cand_rounds
        # The timed rounds are each side's last ``per`` (the untimed one came first).
        faults["baseline"] += base.faults[-per:]
        faults["candidate"] += cand.faults[-per:]

    def _process_ceiling(self) -> tuple[float, int]:
        """(GB/s, bytes moved) of this process's larger copy (:func:`.copy_ceiling`)."""
        ceiling = copy_ceiling(self.backend, self._defaults.cpu_clock)
        return ceiling.gbps, 2 * ceiling.nbytes

    def _copy_ceiling_at_size(self, timer: Any) -> tuple[float, int]:
        """(GB/s, bytes moved) of a device copy of this benchmark's bytes (same cache
        regime as the benchmark), its fastest of 20 rounds; the process's larger copy
        with the L2 flush."""
        if self.l2_flush:
            return self._process_ceiling()
        reference = copy_reference(self.backend, timer, int(self.bytes or 0))
        runner = RoundRunner(timer, reference.call, reference.iterations)
        for _ in range(20):
            runner()
        return reference.nbytes / min(runner.samples) / 1e9, reference.nbytes

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

    def _keep(self, samples: list[float], method: str, iterations: int, warmup: int,
              first_call: float, flusher: L2Flusher | None,
              ceiling: tuple[float, int] | None) -> None:
        """Make this run's record and hand it on."""
        assert self._environment is not None
        self.record = BenchmarkRecord(
            name=self.name, environment=self._environment, method=method,
            samples=list(samples), iterations=iterations, warmup_rounds=warmup,
            first_call_seconds=first_call, l2_flushed=flusher is not None, bytes=self.bytes,
            flops=self.flops, ceiling_gbps=ceiling[0] if ceiling else None,
            ceiling_bytes=ceiling[1] if ceiling else None, extra=dict(self.extra))
        self.benchmark.extra_info["gpucheck"] = _extra_info(self.record)
        self._on_record(self.record)

    def _baseline(self, device_model: str) -> BenchmarkRecord | None:
        """The record this run will be compared with (only when comparing)."""
        if self._store is None:
            return None
        return self._store.baseline(self.name, device_model, self.backend.name)

    def _baseline_iterations(self, device_model: str) -> int | None:
        baseline = self._baseline(device_model)
        return baseline.iterations if baseline is not None else None


def next_look_fits(elapsed: float, starting: float, done: int, step: int, missing: int,
                   start_per_pair: float, budget: float) -> bool:
    """Whether a benchmark's next look ends within its ``budget`` (seconds): ``elapsed``
    so far, ``starting`` of them spent starting processes, ``done`` pairs timed; the
    look times ``step`` more pairs at the pace of those (start-up left out of the pace)
    and first starts the ``missing`` pairs it needs that are not running, each taking
    ``start_per_pair``."""
    pace = max(elapsed - starting, 0.0) / max(done, 1)
    return elapsed + pace * step + missing * start_per_pair <= budget


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
