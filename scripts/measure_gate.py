"""Measure the regression gate's false-alarm rate and its power on this machine.

Each comparison times a baseline window and two current windows of the same
workload through the ``gpu_benchmark`` machinery (warm-up, calibrated rounds,
the backend's timer, rounds added until the gate's power is reached, up to
``--max-rounds``) and asks the gate for two verdicts:

* null comparison: the current window runs the identical workload; any
  "regression" is a false alarm;
* slowdown comparison: the current window runs the workload plus a fixed
  amount of arithmetic worth ``--slowdown`` (default 10%) of the workload's
  calibrated time per call (median of the fastest half of 100 rounds: the
  uncontended time), an injected regression the gate should catch.  The
  arithmetic is a Python loop on one integer, its cost per iteration
  calibrated on the clock that times the rounds (fastest of 20 runs): no
  system call and no memory traffic, so it adds its own time and disturbs
  nothing else.  (A busy wait that reads a CPU-time clock makes a system call
  per read, which also disturbs the caches: at 2^19 elements it moved the
  ratio by +14% .. +44% instead of +10%.)

The two current windows run in alternating order after the baseline.  An
"inconclusive" verdict (the noise left the comparison short of the gate's
power) is counted on its own: it is neither a false alarm nor a catch.

Every round is paired with a device copy of the same bytes (``--reference
copy``, the default, as the ``gpu_benchmark`` fixture does for a benchmark
that declares its bytes); the gate then compares the ratios saxpy / copy, so a
machine-wide slowdown between the two windows cancels.  ``--reference none``
measures the gate on the times alone.

Usage::

    python scripts/measure_gate.py [--comparisons 200] [--size 4194304]

Prints the false-alarm rate and the detection rate, each with PASS or FAIL
against its target (at most 1% false alarms, at least 90% caught), and the
settings used; exits non-zero when either target is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.bench.environment import describe
from pytest_gpucheck.bench.gate import GateSettings, compare, planned_rounds
from pytest_gpucheck.bench.measure import (
    Reference,
    RoundRunner,
    calibrate_iterations,
    copy_reference,
    warm_up,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.settings import DEFAULT_MAX_ROUNDS, DEFAULT_ROUNDS
from pytest_gpucheck.bench.timing import RoundTimer, timer_for


def burn(loops: int) -> int:
    """A fixed amount of arithmetic on one integer (no system call, no memory traffic)."""
    value = 0
    for i in range(loops):
        value ^= i
    return value


def loops_for(seconds: float, clock: Callable[[], float] = time.perf_counter,
              probe: int = 200_000) -> int:
    """How many :func:`burn` iterations cost ``seconds`` of ``clock``: the fastest of 20
    timed runs (the uncontended cost, as the workload's own calibration takes)."""
    best = float("inf")
    for _ in range(20):
        start = clock()
        burn(probe)
        best = min(best, clock() - start)
    return max(1, round(seconds * probe / best))


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="rounds per window before the power plan adds more")
    parser.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS,
                        help="cap of the power plan (ini gpu_bench_max_rounds)")
    parser.add_argument("--size", type=int, default=1 << 19, help="saxpy elements")
    parser.add_argument("--slowdown", type=float, default=0.10)
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--cpu-clock", default="auto", choices=("auto", "process", "wall"))
    parser.add_argument("--reference", default="copy", choices=("copy", "none"),
                        help="calibration workload paired with every round (default copy)")
    parser.add_argument("--alpha", type=float, default=GateSettings().alpha)
    parser.add_argument("--min-effect", type=float, default=GateSettings().min_effect)
    parser.add_argument("--keep-fraction", type=float, default=GateSettings().keep_fraction)
    parser.add_argument("--relative-min-effect", type=float,
                        default=GateSettings().relative_min_effect)
    parser.add_argument("--detect-effect", type=float, default=GateSettings().detect_effect)
    parser.add_argument("--power", type=float, default=GateSettings().power)
    args = parser.parse_args(argv)

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
    extra = args.slowdown * median

    # The host clock the rounds are timed with; events (a GPU) time the device, where
    # host arithmetic is no slowdown at all, so this script injects on the host tier only.
    clock = getattr(timer, "clock", time.perf_counter)

    loops = loops_for(extra, clock)

    def slowed() -> Any:
        result = saxpy()
        burn(loops)
        return result

    reference = copy_reference(backend, timer, 12 * args.size) \
        if args.reference == "copy" else None
    settings = GateSettings(alpha=args.alpha, min_effect=args.min_effect,
                            keep_fraction=args.keep_fraction,
                            relative_min_effect=args.relative_min_effect,
                            detect_effect=args.detect_effect, power=args.power)
    settings.validate()
    false_alarms = detections = null_inconclusive = slow_inconclusive = 0
    null_changes, slow_changes, window_rounds, powers = [], [], [], []
    started = time.perf_counter()
    for index in range(args.comparisons):
        base = window(timer, saxpy, iterations, args.rounds, "saxpy", backend, reference,
                      settings, args.max_rounds)
        window_rounds.append(len(base.samples))
        # Alternate which current window runs right after the baseline.
        for slowdown in ((False, True) if index % 2 == 0 else (True, False)):
            new = window(timer, slowed if slowdown else saxpy, iterations, args.rounds,
                         "saxpy", backend, reference, settings, args.max_rounds, base)
            window_rounds.append(len(new.samples))
            verdict = compare(base, new, settings)
            if verdict.power is not None:
                powers.append(verdict.power)
            if slowdown:
                slow_changes.append(verdict.change or 0.0)
                detections += verdict.status == "regression"
                slow_inconclusive += verdict.status == "inconclusive"
            else:
                null_changes.append(verdict.change or 0.0)
                false_alarms += verdict.status == "regression"
                null_inconclusive += verdict.status == "inconclusive"
        done = index + 1
        if done % 10 == 0:
            # Running totals, so a long run on a busy machine can be read before it ends.
            print(f"after {done}: false alarms {false_alarms}/{done}, caught {detections}/{done}, "
                  f"inconclusive {null_inconclusive}+{slow_inconclusive}, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    elapsed = time.perf_counter() - started

    n = args.comparisons
    false_rate, detect_rate = false_alarms / n, detections / n
    print(f"backend {backend.name} on {describe(backend).device_model}; timer {timer.method}")
    print(f"workload saxpy n={args.size} float32, {median * 1e6:.1f} us/call uncontended, "
          f"{iterations} call(s)/round, {args.rounds} rounds per window and more as the "
          f"power plan asks, up to {args.max_rounds}: median {np.median(window_rounds):.0f}, "
          f"max {max(window_rounds)}")
    if reference is not None:
        print(f"gate: Mann-Whitney U two-sided alpha={settings.alpha:g} on the ratios "
              f"saxpy / {reference.description} per pair of rounds "
              f"({reference.iterations} call(s)/round, "
              f"interleaved), and median ratio change > {settings.relative_min_effect:.0%}; "
              f"inconclusive below {settings.power:.0%} power to catch "
              f"+{settings.design_effect(True):.0%}")
    else:
        print(f"gate: Mann-Whitney U two-sided alpha={settings.alpha:g} and median change > "
              f"{settings.min_effect:.0%}, on the fastest {settings.keep_fraction:.0%} of rounds; "
              f"inconclusive below {settings.power:.0%} power to catch "
              f"+{settings.design_effect(False):.0%}")
    false_ok, detect_ok = false_rate <= 0.01, detect_rate >= 0.90
    print(f"null comparisons:     {n}, false alarms {false_alarms} ({false_rate:.1%}), "
          f"inconclusive {null_inconclusive}; median change spread p1..p99 "
          f"{np.percentile(null_changes, 1):+.1%} .. {np.percentile(null_changes, 99):+.1%}")
    print(f"slowdown comparisons: {n} (+{args.slowdown:.0%} injected), caught {detections} "
          f"({detect_rate:.1%}), inconclusive {slow_inconclusive}; measured change p1..p99 "
          f"{np.percentile(slow_changes, 1):+.1%} .. {np.percentile(slow_changes, 99):+.1%}")
    if powers:
        print(f"gate's power figure per comparison: median {np.median(powers):.1%}, "
              f"min {min(powers):.1%}")
    print(f"elapsed {elapsed:.1f} s")
    print(f"false alarms <= 1%: {'PASS' if false_ok else 'FAIL'} ({false_rate:.1%})")
    print(f"caught >= 90%:      {'PASS' if detect_ok else 'FAIL'} ({detect_rate:.1%})")
    ok = false_ok and detect_ok
    print("PASS" if ok else "FAIL: false alarms must be <= 1% and detection >= 90%")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
