"""The gate's judgements: a stored record against its baseline (rounds, Mann-Whitney),
an interleaved run's pairs, and Holm's method over the run's family, with the one
decision rule every interval verdict goes through (:func:`decide`).

The figures come from :mod:`.figures`, the lines from :mod:`.format`; a judgement only
decides, and keeps every figure it decided on in the verdict it returns, so a line
shows them as they were computed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from pytest_gpucheck.bench.gate.figures import (
    as_change,
    compared_values,
    interval_of,
    pair_figures,
    pair_means,
    smallest_pvalue,
)
from pytest_gpucheck.bench.gate.format import (
    cross_mode_refusal,
    mismatch,
    record_notes,
    version_note,
)
from pytest_gpucheck.bench.gate.settings import GateSettings
from pytest_gpucheck.bench.gate.verdict import INTERLEAVED, JUDGED, Status, Verdict
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.sequential import (
    LookSchedule,
    more_pairs_needed,
    sequential_pvalue,
)
from pytest_gpucheck.bench.settings import DEFAULT_FAMILY_LEVEL
from pytest_gpucheck.bench.stats import (
    holm_levels,
    mann_whitney_u,
    pair_power,
    robust_sigma,
)


def decide(low: float, mean: float, high: float, floor: float, power: float,
           target: float) -> Status:
    """The decision rule of every interval verdict (interleaved pairs, stored
    processes): REGRESSION when the interval's lower end is above 0 and the estimate
    above the ``floor``, IMPROVEMENT the mirror image; otherwise the ``power`` to catch
    the design slowdown decides between unchanged and inconclusive (below ``target``).
    All in log ratios."""
    if low > 0.0 and mean > floor:
        return "regression"
    if high < 0.0 and mean < -floor:
        return "improvement"
    return "inconclusive" if power < target else "unchanged"


def compare(
    baseline: BenchmarkRecord | None, current: BenchmarkRecord, settings: GateSettings,
    cross_mode: bool = False,
) -> Verdict:
    """Decide whether ``current`` regressed against ``baseline``.

    A baseline measured in another kind of process (:func:`cross_mode_refusal`) is not
    compared unless ``cross_mode`` (``--gpu-bench-cross-mode``) asks for it; the run
    refuses it before any benchmark where it can tell (bench/session.py), this is the
    refusal for the rest (an item sent to MPI ranks)."""
    env = current.environment
    base = Verdict(current.name, current.backend, env.device_model, "no-baseline",
                   new_median=current.median, settings=settings)
    if baseline is None:
        return replace(base, reason="no baseline recorded for this benchmark on this device "
                                    "and backend")
    differs = mismatch(baseline, current)
    if differs:
        return replace(base, status="not-comparable", baseline_median=baseline.median,
                       reason=differs)
    modes = baseline.extra.get("process_mode"), current.extra.get("process_mode")
    if not cross_mode and modes[0] and modes[1] and modes[0] != modes[1]:
        return replace(base, status="not-comparable", baseline_median=baseline.median,
                       reason=cross_mode_refusal(str(modes[0]), str(modes[1])))
    rounds = min(len(baseline.samples), len(current.samples))
    if rounds < settings.min_rounds:
        return replace(base, status="not-comparable",
                       reason=f"{rounds} rounds < min_rounds={settings.min_rounds}")
    note = record_notes(baseline, current)
    relative = bool(baseline.ratios and current.ratios
                    and baseline.reference == current.reference)
    old, new = settings.kept(baseline.samples), settings.kept(current.samples)
    tested_old, tested_new = compared_values(baseline, settings, relative), \
        compared_values(current, settings, relative)
    floor = smallest_pvalue(len(tested_new), len(tested_old))
    if floor >= settings.alpha:
        return replace(base, status="not-comparable", reason=(
            f"{len(tested_new)} vs {len(tested_old)} compared "
            f"{'pairs of rounds' if relative else 'rounds'} cannot reach alpha="
            f"{settings.alpha:g} (smallest possible p {floor:.2g}); time more rounds "
            "(ini gpu_bench_rounds)"))
    test = mann_whitney_u(tested_new, tested_old)
    verdict = replace(base, status="unchanged", pvalue=test.pvalue, reason=note,
                      baseline_median=float(np.median(old)), new_median=float(np.median(new)))
    if relative:
        verdict = replace(verdict, relative_to=current.reference, relative_change=float(
            np.median(tested_new) / np.median(tested_old) - 1.0))
    # The power to catch the design effect, from the noise both windows show: a
    # comparison that could not have seen a 10% slowdown says so instead of passing.
    sigma = robust_sigma(np.log(tested_old), np.log(tested_new))
    power = settings.power_of(sigma, len(tested_old), len(tested_new), relative)
    verdict = replace(verdict, noise=sigma, power=power)
    change = verdict.change or 0.0
    threshold = settings.relative_min_effect if relative else settings.min_effect
    if test.pvalue < settings.alpha and abs(change) > threshold:
        return replace(verdict, status="regression" if change > 0 else "improvement")
    if power < settings.power:
        needed = settings.rounds_for(sigma, relative)
        needed = 2 * needed if relative else math.ceil(needed / settings.keep_fraction)
        rounds_now = min(len(baseline.samples), len(current.samples))
        extra = (f"; it needs {needed} rounds on both sides, has {rounds_now} (raise ini "
                 "gpu_bench_max_rounds, or run on a quieter machine)"
                 if needed > rounds_now else "")
        unit = "pair of rounds" if relative else "round"
        why = (f"noise {sigma:.1%} per {unit} leaves {power:.0%} power to catch a "
               f"{settings.design_effect(relative):.0%} slowdown (target "
               f"{settings.power:.0%}){extra}")
        return replace(verdict, status="inconclusive",
                       reason=f"{why}; {note}" if note else why)
    return verdict


def planned_rounds(samples: list[float], reference_samples: list[float],
                   settings: GateSettings, rounds: int, max_rounds: int,
                   baseline: BenchmarkRecord | None = None) -> int:
    """How many rounds a benchmark should time, judged from the rounds timed so far.

    The noise of what the gate will compare (ratios to the reference when every
    round has one, else the fastest ``keep_fraction`` of the times) decides how many
    rounds reach the gate's power (:meth:`GateSettings.power_of`); never fewer than
    ``rounds``, never more than ``max_rounds``.  With the ``baseline`` it will be
    compared with, the plan uses the noise of both and the baseline's rounds as
    they are; without one (a run that records a baseline) it assumes a baseline
    like this run.  The plan aims at the power halfway between the target and 1
    (95% for a 90% target): the noise is an estimate, and a plan aimed at the
    target itself would miss it about half the time.

    The plan looks at the spread of the rounds only, never at the difference from
    the baseline, so extending a run by it does not bias the test (a sample size
    re-estimated from the variance alone).
    """
    relative = bool(reference_samples) and len(reference_samples) == len(samples)
    values = (pair_means([s / r for s, r in zip(samples, reference_samples, strict=True)])
              if relative else settings.kept(samples))
    if len(values) < 2 or min(values) <= 0.0:
        return rounds
    cap = max(max_rounds, rounds)
    target = (1.0 + settings.power) / 2.0
    old: list[float] = []
    if baseline is not None and bool(baseline.ratios) == relative:
        old = compared_values(baseline, settings, relative)
    if len(old) >= 2 and min(old) > 0.0:
        sigma = robust_sigma(np.log(old), np.log(values))
        # The smallest count of this run's rounds that reaches the target with the
        # baseline's rounds as they are (or the cap, when none does).
        for total in range(max(rounds, len(samples)), cap + 1):
            kept = total // 2 if relative else max(int(total * settings.keep_fraction), 2)
            if settings.power_of(sigma, len(old), kept, relative) >= target:
                return total
        return cap
    needed = settings.rounds_for(robust_sigma(np.log(values)), relative, power=target)
    # Rounds from compared values: two per pair, or 1 / keep_fraction per kept time.
    needed = 2 * needed if relative else math.ceil(needed / settings.keep_fraction)
    return int(min(max(rounds, needed), cap))


def compare_interleaved(baseline: BenchmarkRecord, current: BenchmarkRecord,
                        settings: GateSettings, level: float = DEFAULT_FAMILY_LEVEL,
                        family: int = 1) -> Verdict:
    """Decide whether ``current`` regressed against ``baseline`` timed beside it.

    ``baseline.samples[k]`` and ``current.samples[k]`` are rounds of the baseline
    checkout and of this one timed one right after the other (``--gpu-bench-against``),
    so whatever slows the machine down for longer than a round slows both and cancels
    in their ratio.  The rounds come in ``replicates`` equal runs of the test, each in
    a pair of processes of its own: where a process's arrays land in memory moves a
    memory-bound kernel by several percent for every block that pair times, so the
    pair, not the block, is the independent unit.  Each pair gives one figure, the
    median log ratio of its blocks; the change is their mean, judged by
    :func:`judge_pairs` at the two-sided ``level`` (the family's level over the
    ``family`` benchmarks of the run, :func:`judge_family`).
    """
    env = current.environment
    base = Verdict(current.name, current.backend, env.device_model, "not-comparable",
                   baseline_median=baseline.median, new_median=current.median,
                   settings=settings, relative_to=INTERLEAVED)
    differs = mismatch(baseline, current)
    if differs:
        return replace(base, reason=differs)
    runs = pair_figures(baseline, current)
    if len(runs) < 2 or not all(runs):
        return replace(base, reason=f"{len(runs)} pair(s) of processes with timed blocks; "
                                    "the gate needs at least 2 (ini gpu_bench_replicates)")
    figures = tuple(float(statistics.median(run)) for run in runs)
    verdict = replace(base, pair_figures=figures, pair_blocks=tuple(map(tuple, runs)),
                      reason=version_note(baseline, current),
                      **sequential_fields(current.extra), **_held(current.extra))
    return judge_pairs(verdict, level, family)


def sequential_fields(extra: dict[str, Any]) -> dict[str, Any]:
    """The looks a record's pairs were judged at (``extra["sequential"]``, written by the
    fixture): the looks, the last look's share of the level, why they stopped, the
    schedule and the budget; nothing for a record of one fixed look."""
    facts = extra.get("sequential")
    if not facts:
        return {}
    looks = tuple(int(n) for n in facts["looks"])
    schedule = {k: int(v) for k, v in dict(facts["schedule"]).items()}
    share = LookSchedule(schedule["first"], schedule["step"],
                         schedule["max_looks"]).share(len(looks))
    return {"looks": looks, "look_share": share, "stopped": str(facts.get("stopped", "")),
            "schedule": schedule, "budget": facts.get("budget")}


def _held(extra: dict[str, Any]) -> dict[str, Any]:
    """How the measured processes were placed (pinning, placement seed), from a record."""
    return {"pinning": str(extra.get("pinning", "")),
            "placement_seed": extra.get("placement_seed")}


def look_decides(figures: list[float], settings: GateSettings, level: float,
                 share: float) -> bool:
    """Whether a look at ``figures``, spending ``share`` of the two-sided ``level``,
    decides (regression, improvement or unchanged; not inconclusive): the fixture
    stops adding pairs when it does (:mod:`.sequential`)."""
    if len(figures) < 2:
        return False
    probe = Verdict("", "", "", "inconclusive", settings=settings,
                    pair_figures=tuple(figures), look_share=share)
    return judge_pairs(probe, level, 1).status != "inconclusive"



#: Beyond this many times the schedule's reach, more pairs are no advice: the benchmark
#: is too noisy for the runner (issue 43 saw "about 3820 more pairs" on torch-cpu).
PAIRS_WORTH_ADVISING = 3

#: The end of the reason an inconclusive interleaved verdict gives (a later judgement
#: of the same pairs replaces everything up to it).
_QUIETER = "or run on a quieter machine"
_RAISE_PAIRS = f"raise ini gpu_bench_replicates, {_QUIETER}"


def judge_pairs(verdict: Verdict, level: float, family: int) -> Verdict:
    """The verdict of ``verdict.pair_figures`` at the two-sided ``level`` (the benchmark's
    level; its last look spends ``verdict.look_share`` of it, :mod:`.sequential`).

    REGRESSION: the interval's lower end is above 0 and the estimate above the floor
    (``relative_min_effect``); IMPROVEMENT the mirror image.  Otherwise the power to
    catch the design effect (10%) at this level, from the between-pair SD
    (:func:`~.stats.pair_power`), decides between unchanged and inconclusive.  Every
    figure the line prints is one of these: the estimate, its interval, the pairs,
    their SD, the p-value (of the look: ``min(1, p / share)``) and the power.
    """
    settings = verdict.settings
    spent = level * verdict.look_share
    test = interval_of(verdict.pair_figures or (), spent)
    floor = math.log1p(settings.relative_min_effect)
    shift = math.log1p(settings.design_effect(True))
    power = pair_power(test.sd, test.pairs, shift, spent, floor)
    # A verdict judged before (at its first, per-benchmark level) says why it was
    # inconclusive then; only its own note (a framework upgrade) is kept.
    note = verdict.reason.rpartition(_QUIETER)[2].removeprefix("; ")
    judged = replace(verdict, status="unchanged",
                     pvalue=sequential_pvalue(test.pvalue, verdict.look_share),
                     relative_change=as_change(test.mean),
                     interval=(as_change(test.low), as_change(test.high)), level=level,
                     family=family, noise=test.sd, power=power, reason=note)
    status = decide(test.low, test.mean, test.high, floor, power, settings.power)
    if status != "inconclusive":
        return replace(judged, status=status)
    why = (f"the between-pair SD {test.sd:.1%} over {test.pairs} pairs leaves {power:.0%} "
           f"power to catch +{settings.design_effect(True):.0%} at this level (target "
           f"{settings.power:.0%}); {_advice(verdict, test.sd, level, floor, shift)}")
    return undecided(judged, why, note)


def undecided(judged: Verdict, why: str, note: str) -> Verdict:
    """``judged`` as INCONCLUSIVE: ``why`` first, then the verdict's own ``note``."""
    return replace(judged, status="inconclusive", reason=f"{why}; {note}" if note else why)


def _advice(verdict: Verdict, sd: float, level: float, floor: float, shift: float) -> str:
    """What an inconclusive interleaved verdict needs: for a run that stopped adding pairs
    (the budget, the schedule's last look), how many more pairs a decision needs, computed
    from the between-pair SD at the level the next look would spend."""
    if not verdict.looks or verdict.schedule is None:
        return _RAISE_PAIRS
    schedule = LookSchedule(verdict.schedule["first"], verdict.schedule["step"],
                            verdict.schedule["max_looks"])
    taken = len(verdict.looks)
    # The next look's share; past the schedule's end, the share a last look spends.
    share = schedule.share(min(taken + 1, schedule.looks))
    more = more_pairs_needed(sd, verdict.looks[-1], shift, level * share, floor,
                             verdict.settings.power)
    looks = f"{verdict.looks[-1]} pairs in {taken} look{'s' if taken > 1 else ''}"
    # The most pairs the schedule times (its last look): advice never points past it
    # (a budget raised for 42 pairs of a 30-pair schedule, or 3820, decides nothing).
    reach = schedule.pairs_at(schedule.looks)
    if not more or verdict.looks[-1] + more > reach:
        total = f"about {verdict.looks[-1] + more} pairs in all" if more else "more pairs"
        if more and verdict.looks[-1] + more <= PAIRS_WORTH_ADVISING * reach:
            first = math.ceil(schedule.first * (verdict.looks[-1] + more) / reach)
            fix = (f"raise ini gpu_bench_replicates to about {first} (the schedule grows "
                   f"with it), {_QUIETER}")
        else:
            fix = f"gate a larger change here (ini gpu_bench_detect_effect) {_QUIETER}"
        # Both of a budget stop's lines name the budget the same way: which of them a run
        # prints depends on its noise, so one reading of the line serves both.
        stop = (f"stopped for the budget ({_budget(verdict)} per benchmark)"
                if verdict.stopped == "budget" else "stopped at the schedule's last look")
        return (f"{stop} after {looks}: a decision needs {total}, more than the {reach} the "
                f"schedule's last look reaches, so a larger budget would not decide it; {fix}")
    needs = f"a decision needs about {more} more pairs"
    if verdict.stopped == "budget":
        return (f"stopped for the budget ({_budget(verdict)} per benchmark) after {looks}: "
                f"{needs}; raise ini gpu_bench_budget, {_QUIETER}")
    return (f"stopped at the schedule's last look ({looks}): {needs}; raise ini "
            f"gpu_bench_replicates, {_QUIETER}")


def _budget(verdict: Verdict) -> str:
    """The budget a verdict stopped for, as its line prints it (``0.001 s``)."""
    return f"{verdict.budget:g} s" if verdict.budget is not None else "its"


def judge_family(verdicts: list[Verdict], family_level: float) -> list[Verdict]:
    """The verdicts of one run judged as one family: Holm's step-down at
    ``family_level`` over every benchmark the interleaved gate compared (those with
    pair figures), each judged again at its Holm level (:func:`~.stats.holm_levels`)
    with its Holm-adjusted p-value; the others as they are.  A run of identical code
    then fails with probability at most ``family_level`` whatever its number of
    benchmarks (under the pair model)."""
    out = list(verdicts)
    members = holm_members(verdicts, family_level, lambda v: bool(v.pair_figures))
    for k, level, p in members:
        out[k] = replace(judge_pairs(verdicts[k], level, len(members)), adjusted_p=p)
    return out


def holm_members(verdicts: list[Verdict], family_level: float,
                 member: Callable[[Verdict], bool]) -> list[tuple[int, float, float]]:
    """The family's members among ``verdicts`` (``member`` of them, compared, with a
    p-value) by index, with their Holm level and Holm-adjusted p-value."""
    judged = [k for k, v in enumerate(verdicts) if member(v) and v.pvalue is not None
              and v.status in JUDGED]
    levels, adjusted = holm_levels([float(verdicts[k].pvalue or 1.0) for k in judged],
                                   family_level)
    return list(zip(judged, levels, adjusted, strict=True))


#: The start of the reason of a stored regression held back at the family's first step.
_HELD = "significant at alpha but not at the family's level"


def stored_first_step(verdict: Verdict, level: float, family: int) -> Verdict:
    """A stored regression that fails (``--gpu-bench-compare-fails``), judged as its
    test ends: it fails only with its p-value at most ``level``, the family's level over
    the ``family`` benchmarks collected (Bonferroni, Holm's first step); one below
    ``alpha`` but above it is inconclusive until the run's step-down
    (:func:`judge_stored_family`) decides."""
    if verdict.status != "regression" or verdict.pvalue is None or verdict.pvalue <= level:
        return replace(verdict, level=level, family=family)
    why = (f"{_HELD} ({level:.2g} over {family} benchmarks, Holm's first step): "
           "the run's step-down decides")
    return replace(verdict, status="inconclusive", level=level, family=family,
                   reason=f"{why}; {verdict.reason}" if verdict.reason else why)


def judge_stored_family(verdicts: list[Verdict], family_level: float) -> list[Verdict]:
    """The stored comparisons of one run that fail (``--gpu-bench-compare-fails``),
    judged as one family: Holm's step-down at ``family_level`` over their p-values.  A
    regression needs its Holm-adjusted p-value at most ``family_level``, its p-value
    below ``alpha`` and a slowdown beyond the minimum effect; one held back at the
    first step (:func:`stored_first_step`) that the step-down confirms becomes a
    regression.  The stored p-values come from a test that treats rounds as
    independent (docs/benchmarks.md), so this bounds the family's false alarms only as
    well as those p-values are calibrated."""
    out = list(verdicts)
    members = holm_members(verdicts, family_level,
                           lambda v: not v.pair_figures and v.relative_to != INTERLEAVED
                           and not v.process_figures)
    for k, level, q in members:
        v = verdicts[k]
        threshold = v.settings.relative_min_effect if v.relative_to else v.settings.min_effect
        regressed = (q <= family_level and float(v.pvalue or 1.0) < v.settings.alpha
                     and (v.change or 0.0) > threshold)
        held = v.reason.startswith(_HELD)
        out[k] = replace(v, adjusted_p=q, level=level, family=len(members),
                         status="regression" if regressed else v.status,
                         reason=v.reason.partition("; ")[2] if regressed and held
                         else v.reason)
    return out


