"""Measure the regression gate's false-alarm rate and its power on this machine.

Two gates, two modes:

* ``--mode interleaved`` (the default; the gate for shared CI runners): the way a
  user runs it.  The script writes two small pytest projects, a *baseline* and a
  *candidate*, each with ``--benchmarks`` ``gpu_benchmark`` tests of saxpy (each with
  arrays of its own), and runs ``pytest --gpu-bench-against=../baseline
  --gpu-report=...`` in the candidate once per session, reading each benchmark's
  verdict from the JSON report.  The session is the unit (its benchmarks share its
  pairs of processes): A/A sessions run identical code on both sides (a session with
  any REGRESSION is a false red run); power sessions add, to benchmark 0 of the
  candidate, a fixed amount of arithmetic worth ``--slowdown`` (10%) of a call (an
  injected regression the gate should catch).  The injection is calibrated first on
  an identical interleaved run: 10% of the time per call the gate compares.  Then
  it fits a simulation to the between-pair spread the A/A sessions measured and runs
  the gate's own rule (looks, shares, Holm) on ``--sim-sessions`` simulated sessions.
* ``--mode stored``: the gate against a baseline recorded earlier, as a user
  runs it: each of ``--sessions`` independent runs saves a fresh baseline
  (``pytest --gpu-bench-save``, ``--processes`` fresh processes per benchmark)
  and compares (``pytest --gpu-bench-compare``) with case 0 slowed; the other
  cases are A/A.  The run is the unit: its benchmarks share its drift.
* ``--mode stored-rounds``: the round-level comparison of one process per
  side, driven in-process: a baseline window, then an identical and a slowed
  window, each compared with it.

The injected slowdown is a wrapper around the workload plus a Python loop on one
integer, worth ``--slowdown`` of the workload's uncontended time per call (median
of the fastest half of 100 rounds): the wrapper's own fixed cost measured, the
loop timed at the count planted, both on the clock that times the rounds; the
power line reports what the gate measured the planted benchmark at.  No system
call and no memory traffic, so it adds its own time and disturbs nothing else.
(A busy wait that reads a CPU-time clock makes a system call per read, which
also disturbs the caches: at 2^19 elements it moved the ratio by +14% .. +44%
instead of +10%.)

An "inconclusive" verdict (the noise left the comparison short of the gate's
power) is counted on its own: it is neither a false alarm nor a catch.

Usage::

    python scripts/measure_gate.py [--sessions 100] [--power-sessions 20] [--benchmarks 20]

Prints one line per session, then the red A/A sessions with a 95% upper bound, the
planted slowdowns caught with a 95% lower bound (and what the gate measured them
at), the variance components, the fitted simulation and the power of the measured
noise shifted by ``--slowdown``.  ``--replay FOLDER ...`` pools the A/A sessions
that earlier runs kept with ``--outputs``, without running any; with ``--evidence
SMALL`` it also writes each of them there, only what the replay reads, small enough to
commit (``docs/gate-evidence/``: sessions of different days and machines pooled).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.bench.environment import describe
from pytest_gpucheck.bench.gate import INTERLEAVED, GateSettings, Verdict, compare, planned_rounds
from pytest_gpucheck.bench.measure import (
    Reference,
    RoundRunner,
    calibrate_iterations,
    copy_reference,
    warm_up,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.settings import (
    DEFAULT_BUDGET,
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_PROCESSES,
    DEFAULT_REPLICATES,
    DEFAULT_ROUNDS,
)
from pytest_gpucheck.bench.timing import RoundTimer, timer_for


def burn(loops: int) -> int:
    """A fixed amount of arithmetic on one integer (no system call, no memory traffic)."""
    value = 0
    for i in range(loops):
        value ^= i
    return value


def _per_call(call: Callable[[], Any], clock: Callable[[], float], repeat: int = 25) -> float:
    """Seconds per call of ``call`` on ``clock``: the fastest of ``repeat`` timings of
    about 2 ms each (the uncontended cost, as the workload's own calibration takes;
    short, so that some timings fall between the scheduler's preemptions on a loaded
    machine)."""
    once = min(timeit.repeat(call, number=10, repeat=5, timer=clock)) / 10
    number = max(1, round(0.002 / max(once, 1e-9)))
    return min(timeit.repeat(call, number=number, repeat=repeat, timer=clock)) / number


def burn_cost(loops: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """What ``burn(loops)`` costs beyond ``burn(0)``, in seconds of ``clock``."""
    return max(0.0, _per_call(lambda: burn(loops), clock) - _per_call(lambda: burn(0), clock))


def loops_for(seconds: float, clock: Callable[[], float] = time.perf_counter) -> int:
    """How many :func:`burn` iterations cost ``seconds`` of ``clock`` beyond ``burn(0)``.

    Found by timing ``burn`` at the counts it will run at, not scaled from one long
    run: an iteration below 256 reuses CPython's cached small integers and costs less
    than one above it, so scaling from 200,000 iterations planted +7.7% where +10% was
    meant (43 iterations at 2^16 elements)."""
    if seconds <= 0:
        return 0
    loops = max(1, round(seconds / max(burn_cost(64, clock) / 64, 1e-12)))
    for _ in range(3):
        cost = burn_cost(loops, clock)
        if cost <= 0:
            break
        loops = max(1, round(loops * seconds / cost))
    return loops


def _nothing() -> None:
    """The workload's stand-in where only the wrapper's cost is timed."""


def plant_cost(clock: Callable[[], float] = time.perf_counter) -> float:
    """The fixed cost per call of planting a slowdown, in seconds of ``clock``: a call
    through ``slowed()`` with ``burn(0)`` (one more Python frame, a call, an empty
    ``range``) against the call itself, timed around a call that does nothing (the
    cost does not depend on the workload, and a difference of two timings of a long
    workload would drown it).  At a few microseconds per call it is not small: at
    4096 elements on numpy it was 0.15 us of 1.5 us, and counting only the loop's
    iterations planted +18% to +25% where +10% was meant."""
    def slowed() -> Any:
        result = _nothing()
        burn(0)
        return result

    return max(0.0, _per_call(slowed, clock) - _per_call(_nothing, clock))


@dataclass(frozen=True)
class Plant:
    """The planted slowdown, calibrated in this process on the uncontended workload:
    ``per_call`` (median of the fastest half of 100 rounds) and the wrapper's fixed
    cost (:func:`plant_cost`), both on ``clock``, with :func:`burn`'s iterations timed
    at the count planted.  All are measured under the same conditions, so the planted
    fraction holds where contention slows the workload and the plant alike."""

    per_call: float
    fixed: float
    clock: Callable[[], float]

    def loops(self, slowdown: float, size: int) -> int:
        """How many :func:`burn` iterations, after the fixed cost, add ``slowdown`` of a
        call; exits with one line where that is below the fixed cost (no plant of that
        size is possible at this workload size)."""
        extra = slowdown * self.per_call
        if extra < self.fixed:
            raise SystemExit(
                f"a planted slowdown of {extra * 1e6:.2f} us ({slowdown:.0%} of a "
                f"{self.per_call * 1e6:.2f} us call) is below the injection's own fixed "
                f"cost ({self.fixed * 1e6:.2f} us) at --size {size}: use a larger --size")
        return loops_for(extra - self.fixed, self.clock)

    def describe(self, loops: int) -> str:
        """What is planted, in the figures it was computed from."""
        planted = self.fixed + burn_cost(loops, self.clock)
        return (f"planting {planted * 1e6:.2f} us ({planted / self.per_call:+.1%} of a "
                f"{self.per_call * 1e6:.2f} us call in this process): the wrapper's fixed "
                f"{self.fixed * 1e6:.2f} us and {loops} loop iterations")


def window(timer: RoundTimer, call: Callable[[], Any], iterations: int, rounds: int,
           name: str, backend: Any, reference: Reference | None = None,
           settings: GateSettings | None = None, max_rounds: int = 0,
           baseline: BenchmarkRecord | None = None) -> BenchmarkRecord:
    """Time ``rounds`` rounds of ``call`` into a record, as the fixture does (with
    ``settings``, adding the rounds the gate's power needs against ``baseline``, or
    against a baseline like this window, up to ``max_rounds``)."""
    first = warm_up(timer, call, 1)
    paired = None if reference is None else Reference(reference.call, reference.iterations,
                                                      reference.description)
    runner = RoundRunner(timer, call, iterations, reference=paired)
    for _ in range(rounds):
        runner()
    if settings is not None:
        # Planned twice, as the fixture does: the second plan sees the added rounds.
        for _ in range(2):
            planned = planned_rounds(runner.samples, paired.samples if paired else [],
                                     settings, rounds, max_rounds, baseline)
            for _ in range(planned - len(runner.samples)):
                runner()
    return BenchmarkRecord(name=name, environment=describe(backend), method=timer.method,
                           samples=runner.samples, iterations=iterations, warmup_rounds=1,
                           first_call_seconds=first, l2_flushed=False,
                           reference=paired.description if paired else "",
                           reference_samples=paired.samples if paired else [])


@dataclass
class Tally:
    """Verdicts of the null and the slowdown comparisons."""

    false_alarms: int = 0
    detections: int = 0
    null_inconclusive: int = 0
    slow_inconclusive: int = 0
    null_changes: list[float] = field(default_factory=list)
    slow_changes: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    powers: list[float] = field(default_factory=list)
    #: Verdicts other than the four counted (no-baseline, not-comparable), or errors.
    other: list[str] = field(default_factory=list)
    #: "case N: +4.1% unchanged" for each miss and false alarm (interleaved mode).
    wrong: list[str] = field(default_factory=list)

    def add(self, slowed: bool, status: str, change: float | None, power: float | None) -> None:
        if power is not None:
            self.powers.append(power)
        if status not in ("regression", "improvement", "unchanged", "inconclusive"):
            self.other.append(status)
        if slowed:
            self.slow_changes.append(change or 0.0)
            self.detections += status == "regression"
            self.slow_inconclusive += status == "inconclusive"
        else:
            self.null_changes.append(change or 0.0)
            self.false_alarms += status == "regression"
            self.null_inconclusive += status == "inconclusive"

    def progress(self, done: int, started: float) -> str:
        return (f"after {done}: false alarms {self.false_alarms}/{done}, caught "
                f"{self.detections}/{done}, inconclusive {self.null_inconclusive}+"
                f"{self.slow_inconclusive}, {time.perf_counter() - started:.0f} s")


#: The benchmark both projects of ``--mode interleaved`` run: ``--benchmarks`` cases of
#: saxpy, each with arrays of its own; in the candidate of a power session case 0 adds
#: ``burn(LOOPS)``.
PROJECT_TEST = """\
import numpy as np
import pytest

SIZE = {size}
LOOPS = {loops}
SLOWED = {slowed}


def burn(loops):
    value = 0
    for i in range(loops):
        value ^= i
    return value


@pytest.mark.parametrize("case", range({benchmarks}))
def test_saxpy(gpu_backend, gpu_benchmark, case):
    rng = np.random.default_rng(case)
    x = gpu_backend.to_device(rng.random(SIZE, dtype=np.float32))
    y = gpu_backend.to_device(rng.random(SIZE, dtype=np.float32))
    out = gpu_backend.empty((SIZE,), np.float32)
    xp = gpu_backend.xp

    def saxpy():
        if gpu_backend.mutable_arrays:
            xp.multiply(x, np.float32(2.5), out=out)
            xp.add(out, y, out=out)
            return out
        return np.float32(2.5) * x + y

    def slowed():
        result = saxpy()
        burn(LOOPS)
        return result

    gpu_benchmark.pedantic(slowed if SLOWED and case == 0 else saxpy, bytes=12 * SIZE)
"""


def run_pytest(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One gate session's pytest, its output captured.  When this script is stopped
    (SIGTERM, see :func:`stop_on_sigterm`; Ctrl-C) the session's pytest gets SIGTERM and
    is waited for: it ends its gate's processes and removes their folders, which
    ``subprocess.run``'s SIGKILL left to the orphan guards and the next run's sweep."""
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True) as child:
        try:
            stdout, stderr = child.communicate()
        except BaseException:
            child.terminate()
            child.wait()
            raise
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def stop_on_sigterm() -> None:
    """SIGTERM ends the script as Ctrl-C does: its temporary folder (the two checkouts,
    every session's output) is removed on the way out, where the default action left it
    in the temporary folder for good."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def run_session(root: Path, args: argparse.Namespace, loops: int, slowed: bool,
                benchmarks: int) -> tuple[list[dict[str, Any]], str]:
    """One ``pytest --gpu-bench-against`` session over ``benchmarks`` cases: the gate's
    results from its JSON report, and what went wrong ("" when nothing did)."""
    ini = textwrap.dedent(f"""\
        [pytest]
        gpu_backends = {args.backend}
        gpu_bench_rounds = {args.rounds}
        gpu_bench_cpu_clock = {args.cpu_clock}
        gpu_bench_replicates = {args.pairs}
        gpu_bench_family_level = {args.family_level}
        gpu_bench_relative_min_effect = {args.relative_min_effect}
        gpu_bench_detect_effect = {args.detect_effect}
        gpu_bench_power = {args.power}
        gpu_bench_budget = {args.budget}
        gpu_bench_max_rounds = {args.max_rounds}
        """)
    for side, slow in (("baseline", False), ("candidate", slowed)):
        folder = root / side
        folder.mkdir(exist_ok=True)
        (folder / "pytest.ini").write_text(ini)
        (folder / "test_gate.py").write_text(PROJECT_TEST.format(
            size=args.size, loops=loops, slowed=slow, benchmarks=benchmarks))
    report = root / "report.json"
    report.unlink(missing_ok=True)
    run = run_pytest([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                      "--gpu-bench-against=../baseline", f"--gpu-report={report}"],
                     root / "candidate")
    if args.outputs is not None:
        args.outputs.mkdir(parents=True, exist_ok=True)
        kept = len(list(args.outputs.glob("session-*.txt")))
        (args.outputs / f"session-{kept}.txt").write_text(run.stdout + run.stderr)
        if report.exists():
            shutil.copyfile(report, args.outputs / f"session-{kept}.json")
    if not report.exists():
        return [], f"pytest exited {run.returncode} without a report:\n{run.stdout[-3000:]}"
    results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
    missing = benchmarks - len(results)
    problem = (f"{missing} case(s) without a verdict (pytest exited {run.returncode}):\n"
               f"{run.stdout[-3000:]}" if missing else "")
    return results, problem


def case_of(name: str) -> int:
    """The case number of a node id ``test_gate.py::test_saxpy[numpy-17]``."""
    return int(name.rsplit("-", 1)[-1].rstrip("]"))


def binomial_bound(events: int, trials: int, upper: bool, confidence: float = 0.95) -> float:
    """The one-sided Clopper-Pearson bound of a rate: ``events`` of ``trials``."""
    def cdf(k: int, p: float) -> float:
        # In logs: math.comb(1300, 650) is beyond a float.
        if p <= 0.0 or p >= 1.0:
            return 1.0 if p <= 0.0 or k >= trials else 0.0
        return sum(math.exp(math.lgamma(trials + 1) - math.lgamma(j + 1)
                            - math.lgamma(trials - j + 1) + j * math.log(p)
                            + (trials - j) * math.log1p(-p)) for j in range(k + 1))

    if trials == 0:
        return 1.0 if upper else 0.0
    if (upper and events == trials) or (not upper and events == 0):
        return 1.0 if upper else 0.0
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        # Upper: the p at which seeing <= events has chance 1 - confidence; lower: the p
        # at which seeing >= events has that chance.
        inside = cdf(events, middle) > 1 - confidence if upper \
            else 1 - cdf(events - 1, middle) < 1 - confidence
        low, high = (middle, high) if inside else (low, middle)
    return (low + high) / 2


@dataclass
class Components:
    """Variance components of the A/A benchmarks (log units)."""

    #: SD of the pair figures of each benchmark (what the gate's interval is made of).
    between: list[float] = field(default_factory=list)
    #: Deviations of each block from its pair's median (the noise within a pair).
    within: list[float] = field(default_factory=list)
    blocks_per_pair: int = 0
    #: Each benchmark's mean pair figure (its measured change, log), beside ``between``:
    #: the simulation puts it back (a bias toward one side is part of the noise the gate
    #: meets; subtracting it hid the order bias of issue 43).
    means: list[float] = field(default_factory=list)
    #: Each benchmark's pair figures, standardized by its own mean and SD, and how many
    #: (the shape of the noise only: the tails, the residual pool; the mean is kept in
    #: ``means``).
    standardized: list[float] = field(default_factory=list)
    group_sizes: list[int] = field(default_factory=list)

    def add(self, result: dict[str, Any]) -> None:
        verdict = result["verdict"] or {}
        figures = verdict.get("pair_figures")
        if not figures:
            return
        sd = float(np.std(figures, ddof=1))
        self.between.append(sd)
        self.means.append(float(np.mean(figures)))
        if sd > 0:
            self.standardized += list((np.asarray(figures) - np.mean(figures)) / sd)
            self.group_sizes.append(len(figures))
        for blocks in verdict.get("pair_blocks") or ():
            self.blocks_per_pair = len(blocks)
            self.within += [b - float(np.median(blocks)) for b in blocks]

    def summary(self) -> str:
        if not self.between:
            return "variance components: none measured"
        rms = math.sqrt(float(np.mean(np.square(self.between))))
        text = (f"between-pair SD of the pair figures: median {np.median(self.between):.2%}, "
                f"RMS {rms:.2%}, 90th percentile {np.percentile(self.between, 90):.2%} "
                f"over {len(self.between)} benchmarks")
        if self.within:
            block = float(np.std(self.within)) * math.sqrt(
                self.blocks_per_pair / max(self.blocks_per_pair - 1, 1))
            text += (f"; block SD within a pair {block:.2%} ({self.blocks_per_pair} blocks "
                     "per pair)")
        return text

    def tails(self) -> str:
        """How far the pair figures are from the normal the simulation and the t interval
        assume: the share beyond 2.5 and 3 SD of their own benchmark and their excess
        kurtosis, each beside what normal figures of the same group sizes, standardized
        the same way, give (a benchmark's own mean and SD pull its extremes in)."""
        if len(self.standardized) < 100:
            return "tails: too few pair figures to say"
        z = np.asarray(self.standardized)
        rng = np.random.default_rng(1)
        # The reference: the same standardizing applied to normal figures of the same
        # group sizes (a benchmark's own SD shrinks its extremes).
        ref = np.concatenate([(g - g.mean()) / g.std(ddof=1)
                              for g in (rng.normal(size=n) for n in self.group_sizes * 20)])
        kurtosis = float(np.mean(z ** 4) / np.mean(z ** 2) ** 2 - 3)
        ref_kurtosis = float(np.mean(ref ** 4) / np.mean(ref ** 2) ** 2 - 3)
        beyond = [(float(np.mean(np.abs(z) > c)), float(np.mean(np.abs(ref) > c)))
                  for c in (2.5, 3.0)]
        return (f"tails of {len(z)} pair figures (each standardized within its benchmark): "
                f"beyond 2.5 SD {beyond[0][0]:.2%} (normal figures, the same way: "
                f"{beyond[0][1]:.2%}), beyond 3 SD {beyond[1][0]:.2%} ({beyond[1][1]:.2%}); "
                f"excess kurtosis {kurtosis:+.2f} ({ref_kurtosis:+.2f})")


def session_order(aa: int, power: int) -> list[bool]:
    """The sessions in the order they run (True: a power session): the power sessions
    spread among the A/A ones, so that a run cut short by ``--time-limit`` has some of
    each."""
    order = [False] * aa
    for k in range(power):
        order.insert(round((k + 1) * (aa + k + 1) / (power + 1)), True)
    return order


def run_looks(figures: list[float], schedule: Any, settings: GateSettings, level: float,
              benchmarks: int) -> Verdict:
    """The gate's sequential rule on one benchmark's pair figures, in the order they were
    timed: a look at each of ``schedule``'s pair counts the figures reach, stopping at the
    first that decides; the verdict of that look, or of the last one reached (a run that
    stopped there for its budget or its last look, judged as it was)."""
    from pytest_gpucheck.bench.gate import judge_pairs, look_decides

    reached = [k for k in range(1, schedule.looks + 1) if schedule.pairs_at(k) <= len(figures)]
    look = reached[0] if reached else 1
    for look in reached:
        if look_decides(figures[:schedule.pairs_at(look)], settings, level,
                        schedule.share(look)):
            break
    n = min(schedule.pairs_at(look), len(figures))
    verdict = Verdict("t", "numpy", "cpu", "inconclusive", settings=settings,
                      relative_to=INTERLEAVED, pair_figures=tuple(figures[:n]),
                      looks=tuple(schedule.pairs_at(k) for k in range(1, look + 1)),
                      look_share=schedule.share(look), schedule=schedule.as_dict())
    return judge_pairs(verdict, level, benchmarks)


def shifted_power(sessions: list[list[dict[str, Any]]], family_level: float,
                  slowdown: float) -> str:
    """Power from the measured noise itself: each A/A session's benchmarks (their
    verdicts from the JSON report) in turn get ``slowdown`` added to every pair figure
    (a slowdown that scales the benchmark's time), and the gate's rule (looks, Holm
    over the session) judges that benchmark beside the session's others as measured.
    It assumes a slowdown shifts the log ratio and leaves the noise as it was; it needs
    no parametric model of the noise.  Where the shifted figures would have needed a
    look the A/A run never timed (it decided earlier), the benchmark counts as not
    caught.  The unshifted replay must give the statuses the runs recorded."""
    from pytest_gpucheck.bench.gate import judge_family
    from pytest_gpucheck.bench.sequential import LookSchedule

    settings = GateSettings()
    shift = math.log1p(slowdown)
    caught = trials = agree = judged = 0
    per_session: list[float] = []
    for results in sessions:
        verdicts = [r["verdict"] for r in results
                    if r.get("verdict") and r["verdict"].get("pair_figures")]
        if not verdicts:
            continue
        figures = [[float(x) for x in v["pair_figures"]] for v in verdicts]
        plans = [LookSchedule(v["schedule"]["first"], v["schedule"]["step"],
                              v["schedule"]["max_looks"]) for v in verdicts]
        level = family_level / len(figures)
        base = [run_looks(f, plan, settings, level, len(figures))
                for f, plan in zip(figures, plans, strict=True)]
        replayed = judge_family(base, family_level)
        judged += len(replayed)
        agree += sum(mine.status == v["status"]
                     for mine, v in zip(replayed, verdicts, strict=True))
        hits = 0
        for j, own in enumerate(figures):
            trial = list(base)
            trial[j] = run_looks([x + shift for x in own], plans[j], settings, level,
                                 len(figures))
            hits += judge_family(trial, family_level)[j].status == "regression"
        caught += hits
        trials += len(figures)
        per_session.append(hits / len(figures))
    if not trials:
        return "measured noise shifted: no A/A benchmark with pair figures"
    return (f"measured noise shifted by +{slowdown:.0%} (each benchmark of "
            f"{len(per_session)} A/A sessions in turn, the gate's rule over its session): "
            f"caught in {caught} of {trials} ({caught / trials:.1%}, 95% lower bound "
            f"{binomial_bound(caught, trials, False):.1%} were they independent; per "
            f"session min {min(per_session):.0%}, median {np.median(per_session):.0%}); "
            f"the unshifted replay gives the recorded status in {agree} of {judged}")


def aa_mean_change(sessions: list[list[dict[str, Any]]]) -> str:
    """The A/A evidence judged on its mean change, not only on "no red run": each
    session's mean log change over its compared benchmarks (the session is the
    independent unit: its benchmarks share its pairs of processes), their mean with a
    95% t interval.  Identical code must read about 0; a bias toward one side (the
    order or CPU-half asymmetry of issue 43) shows here even where no run is red."""
    from pytest_gpucheck.bench.stats import pair_test

    means = []
    for results in sessions:
        figures = [float(np.mean(v["pair_figures"])) for r in results
                   if (v := r.get("verdict") or {}).get("pair_figures")]
        if figures:
            means.append(float(np.mean(figures)))
    if len(means) < 2:
        return "A/A mean change: fewer than 2 sessions with compared benchmarks"
    test = pair_test(means, 0.05)
    return (f"A/A mean change over {len(means)} sessions: {math.expm1(test.mean):+.2%} "
            f"[95% CI {math.expm1(test.low):+.2%}, {math.expm1(test.high):+.2%}] (each "
            "session's mean log change over its benchmarks; identical code must read "
            "about 0)")


def simulate_fitted(between: list[float], benchmarks: int, family_level: float,
                    pairs: int, slowdown: float, sessions: int, seed: int = 0,
                    residuals: list[float] | None = None,
                    means: list[float] | None = None) -> str:
    """The family-wise false-alarm rate and the power that the measured variance
    components give, by simulation through the gate's own rule (looks, shares, Holm).

    Each simulated benchmark draws one measured benchmark, its between-pair SD and,
    with ``means``, its measured mean change (both: their spread across benchmarks is
    part of the fit), and its pair figures from a normal of that SD around that mean;
    the sessions hold ``benchmarks`` benchmarks, one of them slowed by ``slowdown`` in
    the power sessions.  No benchmark's own mean is subtracted: a bias the A/A runs
    show (a side-order effect) is simulated as measured (the measured mean also holds
    that benchmark's sampling noise, so this overstates the false alarms a little).
    With ``residuals`` (the measured pair figures, each standardized within its
    benchmark: the noise's shape) the figures are those residuals drawn at random and
    scaled to the SD instead of normal ones: the measured tails, not the normal's."""
    from pytest_gpucheck.bench.gate import judge_family
    from pytest_gpucheck.bench.sequential import LookSchedule

    rng = np.random.default_rng(seed)
    settings = GateSettings()
    schedule = LookSchedule.for_pairs(pairs)
    level = family_level / benchmarks
    sds = np.asarray(between, dtype=np.float64)
    pool = None
    if residuals:
        pool = np.asarray(residuals, dtype=np.float64)
        pool = pool / math.sqrt(float(np.mean(pool ** 2)))

    centres = np.asarray(means if means is not None else [0.0] * len(sds), dtype=np.float64)

    def benchmark(shift: float) -> Verdict:
        pick = int(rng.integers(len(sds)))
        sd, centre = float(sds[pick]), float(centres[pick])
        count = schedule.pairs_at(schedule.looks)
        noise = rng.normal(0.0, 1.0, count) if pool is None else rng.choice(pool, count)
        figures = list(centre + shift + sd * noise)
        return run_looks(figures, schedule, settings, level, benchmarks)

    red = 0
    for _ in range(sessions):
        red += any(v.status == "regression"
                   for v in judge_family([benchmark(0.0) for _ in range(benchmarks)],
                                         family_level))
    power_runs = max(sessions // 5, 1)
    caught = 0
    for _ in range(power_runs):
        verdicts = judge_family([benchmark(math.log1p(slowdown))]
                                + [benchmark(0.0) for _ in range(benchmarks - 1)], family_level)
        caught += verdicts[0].status == "regression"
    model = "normal" if pool is None else f"the {len(pool)} measured residuals"
    if means is not None:
        model += (f", around each benchmark's measured mean change (RMS "
                  f"{math.sqrt(float(np.mean(centres ** 2))):.2%})")
    return (f"fitted simulation ({model}; {len(sds)} measured between-pair SDs, RMS "
            f"{math.sqrt(float(np.mean(sds ** 2))):.2%}; {benchmarks} benchmarks per session, "
            f"{pairs} pairs at the first look, up to {schedule.pairs_at(schedule.looks)}, "
            "every look within the budget): "
            f"{red} of {sessions} A/A sessions red (95% upper bound "
            f"{binomial_bound(red, sessions, True):.2%}); +{slowdown:.0%} caught in {caught} "
            f"of {power_runs} (95% lower bound "
            f"{binomial_bound(caught, power_runs, False):.1%})")


def measure_interleaved(args: argparse.Namespace, plant: Plant) -> int:
    """Independent ``pytest --gpu-bench-against`` sessions: A/A sessions of
    ``--benchmarks`` identical benchmarks (a session with any REGRESSION is a false red
    run), then power sessions with case 0 slowed by ``--slowdown``.  The session, not the
    comparison, is the unit: comparisons in one session share its pairs of processes."""
    started = time.perf_counter()
    components = Components()
    red_sessions = flagged = compared = aa_sessions = 0
    caught = power_sessions = 0
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gpucheck-measure-gate-") as tmp:
        root = Path(tmp)
        results, problem = run_session(root, args, 0, False, 2)
        if problem:
            raise SystemExit(f"calibration run failed: {problem}")
        per_call = float(np.median([np.median(r["record"]["samples"]) for r in results]))
        loops = plant.loops(args.slowdown, args.size) if args.power_sessions else 0
        print(f"calibration: {per_call * 1e6:.2f} us/call in the gate's interleaved run; "
              f"{plant.describe(loops)}", flush=True)
        planted: list[float] = []
        aa_results: list[list[dict[str, Any]]] = []
        durations: list[float] = []
        looks: Counter[int] = Counter()
        for index, slowed in enumerate(session_order(args.sessions, args.power_sessions)):
            if args.time_limit and time.perf_counter() - started > args.time_limit:
                print(f"time limit {args.time_limit:g} s reached: {index} session(s) run",
                      flush=True)
                break
            began = time.perf_counter()
            results, problem = run_session(root, args, loops, slowed, args.benchmarks)
            durations.append(time.perf_counter() - began)
            looks.update(len((r["verdict"] or {}).get("looks") or ()) for r in results)
            if problem:
                problems.append(problem.splitlines()[0])
                print(problem, flush=True)
            statuses = {case_of(r["record"]["name"]): (r["verdict"] or {}).get("status")
                        for r in results}
            nulls = [s for case, s in statuses.items() if not (slowed and case == 0)]
            compared += sum(s in ("regression", "improvement", "unchanged", "inconclusive")
                            for s in nulls)
            flagged += nulls.count("regression")
            if slowed:
                power_sessions += 1
                caught += statuses.get(0) == "regression"
                planted += [float(r["verdict"]["change"]) for r in results
                            if case_of(r["record"]["name"]) == 0
                            and (r["verdict"] or {}).get("change") is not None]
            else:
                aa_sessions += 1
                red_sessions += "regression" in nulls
                aa_results.append(results)
                for result in results:
                    components.add(result)
            print(f"session {index + 1} ({'power' if slowed else 'A/A'}): "
                  f"{Counter(statuses.values())}, {time.perf_counter() - started:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f}; {components.summary()}", flush=True)
    aa = aa_sessions
    print(f"A/A sessions: {red_sessions} of {aa} had a REGRESSION (95% upper bound "
          f"{binomial_bound(red_sessions, aa, True):.1%}); false alarms per benchmark: "
          f"{flagged} of {compared}")
    if durations:
        print(f"one session ({args.benchmarks} benchmarks): median {np.median(durations):.0f} s, "
              f"min {min(durations):.0f} s, max {max(durations):.0f} s; looks per benchmark: "
              f"{dict(sorted(looks.items()))}")
    if power_sessions:
        # The gate's own estimates of the planted benchmark say what was planted, as the
        # gate measures it: their mean is the check on the calibration above.
        measured = (f"; the gate measured the planted one at {np.mean(planted):+.1%} on "
                    f"average (median {np.median(planted):+.1%})" if planted else "")
        print(f"power: {caught} of {power_sessions} planted +{args.slowdown:.0%} caught (95% "
              f"lower bound {binomial_bound(caught, power_sessions, False):.1%}){measured}")
    print_analysis(components, aa_results, args.benchmarks, args)
    if problems:
        print(f"{len(problems)} session(s) with problems: {problems[0]}")
    return 0 if not problems else 1


def print_analysis(components: Components, sessions: list[list[dict[str, Any]]],
                   benchmarks: int, args: argparse.Namespace) -> None:
    """What the A/A ``sessions`` say beyond their red count, the same after a run and in
    a replay: the variance components, the tails, the simulation fitted to them with
    normal figures and with the measured residuals, and the measured noise shifted."""
    print(components.summary())
    if not components.between:
        return
    print(components.tails())
    print(aa_mean_change(sessions))
    for residuals in (None, components.standardized):
        print(simulate_fitted(components.between, benchmarks, args.family_level, args.pairs,
                              args.slowdown, args.sim_sessions, residuals=residuals,
                              means=components.means))
    print(shifted_power(sessions, args.family_level, args.slowdown))


#: The fields of a verdict the replay reads (``--evidence`` keeps only these).
EVIDENCE_FIELDS = ("name", "status", "change", "looks", "schedule", "pair_figures",
                   "pair_blocks")


def write_evidence(into: Path, folder: Path, report: Path,
                   results: list[dict[str, Any]]) -> Path:
    """A kept session's verdicts, :data:`EVIDENCE_FIELDS` only (about 1.5 KB a benchmark
    against 15 KB for the JSON report), as a ``session-FOLDER-N.json`` that ``--replay``
    reads: small enough to commit, so that sessions measured on different days and
    machines are pooled (docs/gate-evidence/)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from measure_accuracy import keep_session

    label = "".join(c if c.isalnum() or c in "_." else "." for c in folder.name)
    return keep_session(into / f"session-{label}-{report.stem.rpartition('-')[2]}.json",
                        results, EVIDENCE_FIELDS)


def replay(folders: list[Path], args: argparse.Namespace) -> int:
    """The A/A figures of sessions run before, from the JSON reports that ``--outputs``
    kept (``session-N.json``; session 0, the calibration run, is left out), pooled over
    ``folders``: red sessions with their bound, the variance components, the fitted
    simulation and the power of the measured noise shifted.  Only folders of A/A runs
    (``--power-sessions 0``) belong here: a power session's planted benchmark would
    count as a false alarm."""
    sessions: list[list[dict[str, Any]]] = []
    for folder in folders:
        files = sorted(folder.glob("session-*.json"),
                       key=lambda f: int(f.stem.rpartition("-")[2]))
        if not files:
            raise SystemExit(f"--replay {folder}: no session-N.json there; give a folder "
                             "that --outputs wrote")
        kept = [(f, json.loads(f.read_text())["sections"]["benchmarks"]["results"])
                for f in files if f.stem != "session-0"]
        sessions += [results for _, results in kept]
        if args.evidence is not None:
            for f, results in kept:
                write_evidence(args.evidence, folder, f, results)
    components = Components()
    statuses: Counter[str] = Counter()
    red = 0
    for results in sessions:
        found = [(r["verdict"] or {}).get("status") for r in results]
        statuses.update(str(s) for s in found)
        red += "regression" in found
        for result in results:
            components.add(result)
    print(f"replayed {len(sessions)} A/A session(s) from {len(folders)} folder(s): {red} "
          f"had a REGRESSION (95% upper bound {binomial_bound(red, len(sessions), True):.1%});"
          f" verdicts {dict(sorted(statuses.items()))}")
    benchmarks = Counter(len(r) for r in sessions).most_common(1)[0][0] if sessions else 0
    print_analysis(components, sessions, benchmarks, args)
    return 0


def stored_session(root: Path, args: argparse.Namespace, loops: int, save: bool,
                   ) -> tuple[list[dict[str, Any]], str]:
    """One ``pytest --gpu-bench-save`` (``save``) or ``--gpu-bench-compare`` session of
    the stored gate over ``--benchmarks`` cases, case 0 slowed by ``loops`` when
    comparing: the results from its JSON report, and what went wrong ("")."""
    ini = textwrap.dedent(f"""\
        [pytest]
        gpu_backends = {args.backend}
        gpu_bench_rounds = {args.rounds}
        gpu_bench_cpu_clock = {args.cpu_clock}
        gpu_bench_processes = {args.processes}
        gpu_bench_family_level = {args.family_level}
        gpu_bench_min_effect = {args.min_effect}
        gpu_bench_detect_effect = {args.detect_effect}
        gpu_bench_power = {args.power}
        """)
    (root / "pytest.ini").write_text(ini)
    (root / "test_gate.py").write_text(PROJECT_TEST.format(
        size=args.size, loops=loops, slowed=not save, benchmarks=args.benchmarks))
    report = root / "report.json"
    report.unlink(missing_ok=True)
    run = run_pytest([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                      "--gpu-bench-save" if save else "--gpu-bench-compare",
                      "--gpu-bench-baseline=baselines", f"--gpu-report={report}"], root)
    if not report.exists():
        return [], f"pytest exited {run.returncode} without a report:\n{run.stdout[-3000:]}"
    results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
    missing = args.benchmarks - len(results)
    problem = (f"{missing} case(s) without a result (pytest exited {run.returncode}):\n"
               f"{run.stdout[-3000:]}" if missing else "")
    return results, problem


def measure_stored_processes(args: argparse.Namespace, plant: Plant) -> int:
    """Independent runs of the stored gate as a user meets it: each run saves a fresh
    baseline (``--gpu-bench-save``, ``gpu_bench_processes`` fresh processes per benchmark)
    and then compares (``--gpu-bench-compare``) with case 0 slowed by ``--slowdown``.
    The other cases are A/A comparisons: a run with a REGRESSION among them (advisory or
    not) is a false red run; case 0 caught is a catch.  The run (a save and a compare),
    not the comparison, is the unit: its benchmarks share its two sessions' drift."""
    started = time.perf_counter()
    red = flagged = compared = caught = 0
    drifts: list[float] = []
    sds: list[float] = []
    problems: list[str] = []
    loops = plant.loops(args.slowdown, args.size)
    calibrated = False
    with tempfile.TemporaryDirectory(prefix="gpucheck-measure-stored-") as tmp:
        root = Path(tmp)
        for index in range(args.sessions):
            shutil.rmtree(root / "baselines", ignore_errors=True)
            saved, problem = stored_session(root, args, loops, save=True)
            if not problem and not calibrated:
                calibrated = True
                per_call = float(np.median([v for r in saved for v in
                                            r["record"]["extra"]["process_summaries"]]))
                print(f"calibration: {per_call * 1e6:.2f} us/call in the stored processes; "
                      f"{plant.describe(loops)}", flush=True)
            results, problem2 = (stored_session(root, args, loops, save=False)
                                 if not problem else ([], problem))
            if problem or problem2:
                problems.append((problem or problem2).splitlines()[0])
                print(problem or problem2, flush=True)
                continue
            verdicts = {case_of(r["record"]["name"]): r["verdict"] or {} for r in results}
            nulls = [v for case, v in verdicts.items() if case != 0]
            statuses = [v.get("status") for v in nulls]
            compared += sum(s in ("regression", "improvement", "unchanged", "inconclusive")
                            for s in statuses)
            flagged += statuses.count("regression")
            red += "regression" in statuses
            caught += verdicts.get(0, {}).get("status") == "regression"
            changes = [math.log1p(v["change"]) for v in nulls if v.get("change") is not None]
            drifts.append(float(np.mean(changes)) if changes else 0.0)
            sds += [float(v["noise"]) for v in nulls if v.get("noise") is not None]
            print(f"run {index + 1}: case 0 {verdicts.get(0, {}).get('status')} "
                  f"{verdicts.get(0, {}).get('change') or 0.0:+.1%}; A/A "
                  f"{Counter(statuses)}, mean A/A change {drifts[-1]:+.2%}; "
                  f"{time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}",
                  flush=True)
    runs = len(drifts)
    print(f"A/A: {red} of {runs} runs had a REGRESSION among their {args.benchmarks - 1} "
          f"identical benchmarks (95% upper bound {binomial_bound(red, runs, True):.1%}); "
          f"per benchmark {flagged} of {compared}")
    print(f"power: {caught} of {runs} planted +{args.slowdown:.0%} caught (95% lower bound "
          f"{binomial_bound(caught, runs, False):.1%})")
    if runs:
        print(f"between-process SD (median over A/A benchmarks) {np.median(sds):.2%}; drift "
              f"between the save and the compare (mean A/A log change per run): SD "
              f"{np.std(drifts, ddof=1) if runs > 1 else 0.0:.2%}, range "
              f"{min(drifts):+.2%} .. {max(drifts):+.2%}")
    if problems:
        print(f"{len(problems)} run(s) with problems: {problems[0]}")
    return 0 if not problems else 1


def measure_stored(args: argparse.Namespace, backend: Any, timer: RoundTimer,
                   saxpy: Callable[[], Any], slowed: Callable[[], Any], iterations: int,
                   settings: GateSettings, tally: Tally) -> str:
    """The gate against a stored baseline: baseline window, then two current windows."""
    reference = copy_reference(backend, timer, 12 * args.size) \
        if args.reference == "copy" else None
    started = time.perf_counter()
    for index in range(args.comparisons):
        base = window(timer, saxpy, iterations, args.rounds, "saxpy", backend, reference,
                      settings, args.max_rounds)
        tally.rounds.append(len(base.samples))
        # Alternate which current window runs right after the baseline.
        for slowdown in ((False, True) if index % 2 == 0 else (True, False)):
            new = window(timer, slowed if slowdown else saxpy, iterations, args.rounds,
                         "saxpy", backend, reference, settings, args.max_rounds, base)
            tally.rounds.append(len(new.samples))
            verdict = compare(base, new, settings)
            tally.add(slowdown, verdict.status, verdict.change, verdict.power)
        if (index + 1) % 10 == 0:
            # Running totals, so a long run on a busy machine can be read before it ends.
            print(tally.progress(index + 1, started), flush=True)
    if reference is not None:
        return (f"gate: Mann-Whitney U two-sided alpha={settings.alpha:g} on the ratios "
                f"saxpy / {reference.description} per pair of rounds "
                f"({reference.iterations} call(s)/round, interleaved), and median ratio "
                f"change > {settings.relative_min_effect:.0%}; inconclusive below "
                f"{settings.power:.0%} power to catch +{settings.design_effect(True):.0%}")
    return (f"gate: Mann-Whitney U two-sided alpha={settings.alpha:g} and median change > "
            f"{settings.min_effect:.0%}, on the fastest {settings.keep_fraction:.0%} of rounds; "
            f"inconclusive below {settings.power:.0%} power to catch "
            f"+{settings.design_effect(False):.0%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="interleaved",
                        choices=("interleaved", "stored", "stored-rounds"),
                        help="gate against the baseline checkout timed beside each round "
                        "(--gpu-bench-against, default), against a stored baseline "
                        "(--gpu-bench-compare, fresh processes per benchmark), or the "
                        "round-level stored comparison of one process per side, in-process")
    parser.add_argument("--comparisons", type=int, default=200, help="stored mode")
    parser.add_argument("--sessions", type=int, default=100,
                        help="interleaved: independent A/A pytest sessions")
    parser.add_argument("--power-sessions", type=int, default=20,
                        help="interleaved: sessions with one benchmark slowed")
    parser.add_argument("--benchmarks", type=int, default=20,
                        help="interleaved: benchmarks per session")
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES,
                        help="stored: fresh processes per benchmark (ini gpu_bench_processes)")
    parser.add_argument("--pairs", type=int, default=DEFAULT_REPLICATES,
                        help="interleaved: pairs of processes (ini gpu_bench_replicates)")
    parser.add_argument("--family-level", type=float, default=DEFAULT_FAMILY_LEVEL,
                        help="interleaved: ini gpu_bench_family_level")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="rounds per window before the power plan adds more")
    parser.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS,
                        help="cap of the power plan (ini gpu_bench_max_rounds)")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                        help="interleaved: seconds per benchmark (ini gpu_bench_budget)")
    parser.add_argument("--time-limit", type=float, default=0.0,
                        help="interleaved: start no session after this many seconds (0: none)")
    parser.add_argument("--outputs", type=Path, default=None,
                        help="interleaved: a folder to keep each session's pytest output and JSON "
                        "report in (session-N.txt, .json; session 0 is the calibration run)")
    parser.add_argument("--evidence", type=Path, default=None, metavar="FOLDER",
                        help="with --replay: write each replayed session there, the "
                        "verdicts' fields the replay reads only, for a later --replay")
    parser.add_argument("--replay", type=Path, nargs="+", default=None, metavar="FOLDER",
                        help="interleaved: run nothing; pool the A/A sessions that --outputs "
                             "kept in these folders (red sessions, variance components, the "
                             "fitted simulation, the measured noise shifted)")
    parser.add_argument("--sim-sessions", type=int, default=1000,
                        help="interleaved: sessions of the simulation fitted to the measured "
                        "variance components")
    parser.add_argument("--size", type=int, default=1 << 19, help="saxpy elements")
    parser.add_argument("--slowdown", type=float, default=0.10)
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--cpu-clock", default="auto", choices=("auto", "process", "wall"))
    parser.add_argument("--reference", default="copy", choices=("copy", "none"),
                        help="stored: calibration workload paired with every round")
    parser.add_argument("--alpha", type=float, default=GateSettings().alpha)
    parser.add_argument("--min-effect", type=float, default=GateSettings().min_effect)
    parser.add_argument("--keep-fraction", type=float, default=GateSettings().keep_fraction)
    parser.add_argument("--relative-min-effect", type=float,
                        default=GateSettings().relative_min_effect)
    parser.add_argument("--detect-effect", type=float, default=GateSettings().detect_effect)
    parser.add_argument("--power", type=float, default=GateSettings().power)
    args = parser.parse_args(argv)
    if args.evidence is not None and not args.replay:
        parser.error("--evidence writes the sessions --replay reads: give --replay FOLDER "
                     "(the folder --outputs kept)")
    if args.evidence is not None and any(
            args.evidence.resolve() == folder.resolve() for folder in args.replay):
        parser.error("--evidence: a folder --replay reads would count its sessions twice; "
                     "give another folder")
    if args.replay:
        return replay(args.replay, args)

    backend = get_backend(args.backend)
    backend.require()
    timer = timer_for(backend, args.cpu_clock)
    rng = np.random.default_rng(0)
    x = backend.to_device(rng.random(args.size, dtype=np.float32))
    y = backend.to_device(rng.random(args.size, dtype=np.float32))
    out = backend.empty((args.size,), np.float32)
    xp = backend.xp

    def saxpy() -> Any:
        if backend.mutable_arrays:
            xp.multiply(x, np.float32(2.5), out=out)
            xp.add(out, y, out=out)
            return out
        return np.float32(2.5) * x + y

    warm_up(timer, saxpy, 3)
    iterations = calibrate_iterations(timer, saxpy)
    calibration = window(timer, saxpy, iterations, 100, "calibration", backend).samples
    median = float(np.median(sorted(calibration)[:50]))
    # The host clock the rounds are timed with; events (a GPU) time the device, where
    # host arithmetic is no slowdown at all, so this script injects on the host tier only.
    clock = getattr(timer, "clock", time.perf_counter)
    plant = Plant(median, plant_cost(clock), clock)
    loops = plant.loops(args.slowdown, args.size) if args.mode == "stored-rounds" else 0

    def slowed() -> Any:
        result = saxpy()
        burn(loops)
        return result

    settings = GateSettings(alpha=args.alpha, min_effect=args.min_effect,
                            keep_fraction=args.keep_fraction,
                            relative_min_effect=args.relative_min_effect,
                            detect_effect=args.detect_effect, power=args.power)
    settings.validate()
    tally = Tally()
    started = time.perf_counter()
    if args.mode == "interleaved":
        print(f"gate: --gpu-bench-against, {args.pairs} pairs of processes, t interval per "
              f"benchmark, Holm over each session's {args.benchmarks} benchmarks at family "
              f"level {args.family_level:g}, floor {args.relative_min_effect:.0%}; "
              f"saxpy n={args.size} on {backend.name}", flush=True)
        code = measure_interleaved(args, plant)
        print(f"elapsed {time.perf_counter() - started:.0f} s, load now "
              f"{os.getloadavg()[0]:.1f}")
        return code
    if args.mode == "stored":
        print(f"gate: --gpu-bench-save then --gpu-bench-compare, {args.processes} fresh "
              f"processes per benchmark and side, two-sample t on their log summaries, Holm "
              f"over each run's {args.benchmarks} benchmarks at family level "
              f"{args.family_level:g}, floor {args.min_effect:.0%}; saxpy n={args.size} on "
              f"{backend.name}", flush=True)
        code = measure_stored_processes(args, plant)
        print(f"elapsed {time.perf_counter() - started:.0f} s, load now "
              f"{os.getloadavg()[0]:.1f}")
        return code
    extra = args.slowdown * median
    gate = measure_stored(args, backend, timer, saxpy, slowed, iterations, settings, tally)
    elapsed = time.perf_counter() - started

    n = args.comparisons
    false_rate, detect_rate = tally.false_alarms / n, tally.detections / n
    print(f"backend {backend.name} on {describe(backend).device_model}; timer {timer.method}")
    rounds = (f"{args.rounds} rounds per window and more as the power plan asks, up to "
              f"{args.max_rounds}")
    print(f"workload saxpy n={args.size} float32, {median * 1e6:.1f} us/call uncontended, "
          f"{rounds}: median {np.median(tally.rounds or [0]):.0f}, "
          f"max {max(tally.rounds or [0])}")
    print(gate)
    print(f"null comparisons:     {n}, false alarms {tally.false_alarms} ({false_rate:.1%}), "
          f"inconclusive {tally.null_inconclusive}; median change spread p1..p99 "
          f"{np.percentile(tally.null_changes or [0], 1):+.1%} .. "
          f"{np.percentile(tally.null_changes or [0], 99):+.1%}")
    print(f"slowdown comparisons: {n} (+{args.slowdown:.0%} injected: {extra * 1e6:.2f} us "
          f"per call), caught "
          f"{tally.detections} ({detect_rate:.1%}), inconclusive {tally.slow_inconclusive}; "
          f"measured change p1..p99 {np.percentile(tally.slow_changes or [0], 1):+.1%} .. "
          f"{np.percentile(tally.slow_changes or [0], 99):+.1%}")
    if tally.powers:
        print(f"gate's power figure per comparison: median {np.median(tally.powers):.1%}, "
              f"min {min(tally.powers):.1%}")
    if tally.wrong:
        print(f"misses and false alarms: {'; '.join(tally.wrong)}")
    if tally.other:
        print(f"not counted: {len(tally.other)}: {', '.join(sorted(set(tally.other)))}")
    print(f"elapsed {elapsed:.1f} s")
    false_ok, detect_ok = false_rate <= 0.01, detect_rate >= 0.90
    print(f"false alarms <= 1%: {'PASS' if false_ok else 'FAIL'} ({false_rate:.1%})")
    print(f"caught >= 90%:      {'PASS' if detect_ok else 'FAIL'} ({detect_rate:.1%})")
    ok = false_ok and detect_ok and not tally.other
    print("PASS" if ok else "FAIL: false alarms must be <= 1% and detection >= 90%, every "
          "comparison with a verdict")
    return 0 if ok else 1


if __name__ == "__main__":
    stop_on_sigterm()
    raise SystemExit(main())
