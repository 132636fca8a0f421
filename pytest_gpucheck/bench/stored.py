"""The stored gate (``--gpu-bench-compare``) at the level of processes.

Rounds of one process are not independent: they share where that process's
arrays landed and its allocator's history, which moved an identical kernel by
several percent for every round the process timed.  A test on rounds treats one
process as dozens of independent measurements and claims far more evidence than
it has (the round-level stored gate raised 5.0% false alarms against its 0.1%
alpha).  So ``--gpu-bench-save`` and ``--gpu-bench-compare`` time each benchmark
in ``gpu_bench_processes`` fresh processes (5 by default, the interleaved gate's
peer processes, with its allocator regime), keep one summary per process (the
median of the fastest half of its rounds) and compare the K stored summaries with
the K of this run.

**The test.**  Student's two-sample t on the logarithms of the summaries, with
pooled variance (:func:`~.stats.two_sample_test`): the change is the difference of
the means (a ratio of geometric means), its interval has K1 + K2 - 2 degrees of
freedom, and the spread it uses is the spread between processes, the variance that
decides whether a difference is real.  A rank test on K + K values cannot do it:
with 5 + 5 its smallest two-sided p-value is 2 / 252 = 0.008, above the family's
level (1% over every benchmark of the run) as soon as there are two benchmarks.
Welch's t would give up degrees of freedom for a difference of spreads that
identical code, timed by the same harness, does not have.

**The decision** has the interleaved gate's shape: a regression is an interval
(at the family's level, Holm's method over the run's benchmarks) whose lower end
is above 0 *and* an estimate above ``min_effect``; the power to catch the design
slowdown at that level comes from the between-process SD (non-central t).

What this cannot cancel is the drift of the machine between the run that saved
the baseline and this one (another tenant, a clock change): the summaries of one
run share it.  ``scripts/measure_gate.py --mode stored`` measures what that costs
(docs/benchmark-evidence.md); :data:`PROCESS_MEASURED` is printed with every stored
verdict that is advisory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from pytest_gpucheck.bench.gate import (
    GateSettings,
    Verdict,
    as_change,
    compare,
    decide,
    holm_members,
    mismatch,
    record_notes,
    undecided,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.stats import t_power, two_sample_test

#: Where a record keeps its per-process summaries (seconds per call, one per process).
SUMMARIES = "process_summaries"

#: Whether those measurements meet 1% false alarms and 90% of 10% slowdowns caught: only
#: then does a stored regression fail the run without ``--gpu-bench-compare-fails``.
MEETS_TARGETS = False

#: The end of the reason of an inconclusive process-level verdict.
_RAISE_PROCESSES = "raise ini gpu_bench_processes, or run on a quieter machine"


def process_summary(samples: Sequence[float], settings: GateSettings) -> float:
    """One process's figure: the median of the fastest ``keep_fraction`` of its rounds
    (contention on a shared machine only adds time; the fast rounds time the code)."""
    return float(np.median(settings.kept(list(samples))))


def summaries_of(record: BenchmarkRecord) -> tuple[float, ...] | None:
    """The log summaries of the processes that measured ``record``, or ``None`` for a
    record measured in one process (saved under ``--gpu-bench-against``)."""
    values = record.extra.get(SUMMARIES)
    if not isinstance(values, list) or len(values) < 2 or min(values) <= 0.0:
        return None
    return tuple(math.log(float(v)) for v in values)


def compare_processes(baseline: BenchmarkRecord | None, current: BenchmarkRecord,
                      settings: GateSettings, level: float, family: int,
                      cross_mode: bool = False) -> Verdict:
    """Decide whether ``current`` regressed against the stored ``baseline``, process
    against process, at the two-sided ``level`` (the family's level over ``family``
    benchmarks, Holm's first step).  Refusals (no baseline, another device or process
    mode) are :func:`~.gate.compare`'s; a side without per-process summaries falls
    back to its round-level comparison (advisory, with that mode's measured rates)."""
    old = summaries_of(baseline) if baseline is not None else None
    new = summaries_of(current)
    modes = (baseline.extra.get("process_mode"), current.extra.get("process_mode")) \
        if baseline is not None else (None, None)
    if baseline is None or old is None or new is None or mismatch(baseline, current) or (
            not cross_mode and modes[0] and modes[1] and modes[0] != modes[1]):
        # No baseline, a refusal, or a record of one process: the round-level comparison.
        return compare(baseline, current, settings, cross_mode=cross_mode)
    env = current.environment
    verdict = Verdict(current.name, current.backend, env.device_model, "unchanged",
                      settings=settings)

    start = replace(verdict, process_figures=(old, new), reason=record_notes(baseline, current))
    return judge_processes(start, level, family)


def judge_processes(verdict: Verdict, level: float, family: int) -> Verdict:
    """The verdict of ``verdict.process_figures`` at the two-sided ``level``: REGRESSION
    when the interval's lower end is above 0 and the estimate above ``min_effect``,
    IMPROVEMENT the mirror image; otherwise the power to catch the design slowdown at
    this level decides between unchanged and inconclusive."""
    assert verdict.process_figures is not None
    old, new = verdict.process_figures
    settings = verdict.settings
    test = two_sample_test(old, new, level)
    floor = math.log1p(settings.min_effect)
    shift = math.log1p(settings.design_effect(False))
    se = test.sd * math.sqrt(1.0 / len(old) + 1.0 / len(new))
    power = t_power(se, len(old) + len(new) - 2, shift, level, floor)
    note = verdict.reason.rpartition(_RAISE_PROCESSES)[2].removeprefix("; ")
    judged = replace(verdict, status="unchanged", pvalue=test.pvalue,
                     relative_change=as_change(test.mean),
                     baseline_median=math.exp(float(np.mean(old))),
                     new_median=math.exp(float(np.mean(new))),
                     interval=(as_change(test.low), as_change(test.high)), level=level,
                     family=family, noise=test.sd, power=power, reason=note)
    status = decide(test.low, test.mean, test.high, floor, power, settings.power)
    if status != "inconclusive":
        return replace(judged, status=status)
    return undecided(judged, f"the between-process SD {test.sd:.1%} over {len(old)} + "
                     f"{len(new)} processes leaves {power:.0%} power to catch "
                     f"+{settings.design_effect(False):.0%} at this level (target "
                     f"{settings.power:.0%}); {_RAISE_PROCESSES}", note)


def judge_stored_processes(verdicts: list[Verdict], family_level: float,
                           fails: bool) -> list[Verdict]:
    """The process-level stored comparisons of one run judged as one family: Holm's
    step-down at ``family_level``, each judged again at its Holm level with its
    adjusted p-value; a regression is advisory unless ``fails``."""
    out = list(verdicts)
    members = holm_members(verdicts, family_level, lambda v: bool(v.process_figures))
    for k, level, p in members:
        judged = judge_processes(verdicts[k], level, len(members))
        out[k] = replace(judged, adjusted_p=p,
                         advisory=judged.status == "regression" and not fails)
    return out
