"""The regression gate: does a run differ from its baseline, really?

A benchmark is a *regression* when both hold:

1. the Mann-Whitney U test on the compared values rejects "same
   distribution" at level ``alpha`` (strict by default, as in asv), and
2. the median got slower by more than ``min_effect`` (a fraction: 0.07 = 7%;
   ``relative_min_effect``, 5%, for ratios to a reference, below).

**Relative to a reference.**  When both records carry a calibration
workload timed beside every round (``reference_samples``: by default a
device copy of the bytes the benchmark declares), the gate compares the
ratios benchmark / reference instead of the times: a machine-wide slowdown
between the two runs (memory contention from another tenant, a clock change)
slows the copy alike and cancels, a change of the benchmark's own code does
not.  The ratios are taken per pair of rounds (:func:`pair_means`: the copy
runs before the benchmark in one and after it in the other, and that order
alone moves the ratio).  Every pair is used: contention that hits only one
member moves the ratio either way, so no tail is dropped.

**Without a reference** the gate compares the fastest ``keep_fraction`` of
each side's times (half by default).  Contention on a shared machine (other
processes, cache thrashing by neighbours, preemption) only ever *adds* time,
and it comes and goes in bursts longer than a round: on a busy 2-core CI
machine the median of all rounds moved by -50%..+140% between two identical
runs, while the median of the fastest half stayed within about +-7%
(``scripts/measure_gate.py``).  The fast rounds measure the code; the slow
tail measures the neighbours.

The test alone flags tiny shifts once there are many rounds (a shared machine
drifts by a few percent between runs); the effect size alone trips on a noisy
median.  Together they fail only on changes that are both real and large
enough to matter.  An improvement (faster by more than the minimum effect,
and significant) is reported, never failed.

**Power.**  Each comparison also computes, from the noise of the compared
values, the probability that it would have caught a slowdown of
``detect_effect`` (10%; :mod:`.stats` derives the figure).  Below ``power``
(90%) a comparison that found nothing is *inconclusive*, not unchanged; the
``gpu_benchmark`` fixture times the rounds the same calculation asks for
(:func:`planned_rounds`), so a noisy benchmark gets more rounds instead.
"""

from __future__ import annotations

import fnmatch
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.sequential import (
    LookSchedule,
    more_pairs_needed,
    sequential_pvalue,
)
from pytest_gpucheck.bench.settings import (
    DEFAULT_ALPHA,
    DEFAULT_DETECT_EFFECT,
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_KEEP_FRACTION,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_ROUNDS,
    DEFAULT_POWER,
    DEFAULT_RELATIVE_MIN_EFFECT,
    SETTING_NAMES,
)
from pytest_gpucheck.bench.stats import (
    holm_levels,
    mann_whitney_u,
    pair_power,
    pair_test,
    robust_sigma,
    rounds_for_power,
    shift_power,
)

Status = Literal["regression", "improvement", "unchanged", "inconclusive", "no-baseline",
                 "not-comparable"]


@dataclass(frozen=True)
class GateSettings:
    """Thresholds of the gate for one benchmark."""

    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    min_rounds: int = DEFAULT_MIN_ROUNDS
    keep_fraction: float = DEFAULT_KEEP_FRACTION
    #: ``min_effect`` of a comparison relative to an interleaved reference.
    relative_min_effect: float = DEFAULT_RELATIVE_MIN_EFFECT
    #: The slowdown the gate must catch (0.10 = 10%) ...
    detect_effect: float = DEFAULT_DETECT_EFFECT
    #: ... with at least this probability; below it, "unchanged" becomes "inconclusive".
    power: float = DEFAULT_POWER

    def with_overrides(self, overrides: dict[str, Any]) -> GateSettings:
        """A copy with ``alpha``/``min_effect``/``min_rounds`` replaced where given."""
        unknown = set(overrides) - set(SETTING_NAMES)
        if unknown:
            raise ValueError(f"unknown gate setting(s) {', '.join(sorted(unknown))}; "
                             f"use {', '.join(SETTING_NAMES)}")
        settings = replace(self, **{key: type(getattr(self, key))(value)
                                    for key, value in overrides.items()})
        settings.validate()
        return settings

    def validate(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"gate alpha must be in (0, 1), got {self.alpha}")
        if self.min_effect < 0.0 or self.relative_min_effect < 0.0:
            raise ValueError(f"gate min_effect and relative_min_effect must be >= 0, got "
                             f"{self.min_effect}, {self.relative_min_effect}")
        if self.min_rounds < 2:
            raise ValueError(f"gate min_rounds must be >= 2, got {self.min_rounds}")
        if not 0.0 < self.keep_fraction <= 1.0:
            raise ValueError(f"gate keep_fraction must be in (0, 1], got {self.keep_fraction}")
        if self.detect_effect <= 0.0:
            raise ValueError(f"gate detect_effect must be > 0, got {self.detect_effect}")
        if not 0.0 < self.power < 1.0:
            raise ValueError(f"gate power must be in (0, 1), got {self.power}")

    def design_effect(self, relative: bool) -> float:
        """The slowdown the power is computed for: ``detect_effect``, or twice the
        minimum effect when that is larger.

        A change must exceed the minimum effect to fail, so a gate cannot promise to
        catch changes near it; at twice the minimum the median condition has the same
        margin on both sides (the defaults, 5% and 10%, are exactly that).
        """
        threshold = self.relative_min_effect if relative else self.min_effect
        return max(self.detect_effect, 2.0 * threshold)

    def power_of(self, sigma: float, n_old: int, n_new: int, relative: bool) -> float:
        """Probability of flagging :meth:`design_effect` with these rounds and noise."""
        threshold = self.relative_min_effect if relative else self.min_effect
        return shift_power(sigma, n_old, n_new, math.log1p(self.design_effect(relative)),
                           self.alpha, math.log1p(threshold))

    def rounds_for(self, sigma: float, relative: bool, power: float | None = None) -> int:
        """Rounds per side for :meth:`power_of` to reach ``power`` (default ``self.power``)."""
        threshold = self.relative_min_effect if relative else self.min_effect
        return rounds_for_power(sigma, math.log1p(self.design_effect(relative)), self.alpha,
                                math.log1p(threshold), self.power if power is None else power)

    def kept(self, samples: list[float]) -> list[float]:
        """The fastest ``keep_fraction`` of ``samples`` (at least two)."""
        count = max(int(len(samples) * self.keep_fraction), min(2, len(samples)))
        return sorted(samples)[:count]


@dataclass(frozen=True)
class Verdict:
    """The gate's decision for one benchmark, with the figures behind it."""

    name: str
    backend: str
    device: str
    status: Status
    #: Medians of the rounds the gate compares (the fastest ``keep_fraction``).
    baseline_median: float | None = None
    new_median: float | None = None
    pvalue: float | None = None
    settings: GateSettings = GateSettings()
    reason: str = ""
    #: The reference the change is measured against (``copy of 12582912 B``), or "".
    relative_to: str = ""
    #: With a reference: the change of the median ratio benchmark / reference.
    relative_change: float | None = None
    #: Per-round noise of the compared values (robust standard deviation of their log).
    noise: float | None = None
    #: Probability that these rounds, with this noise, catch the design effect.
    power: float | None = None
    #: ``--gpu-bench-against``: one log change per pair of processes (the evidence).
    pair_figures: tuple[float, ...] | None = None
    #: ... the median of that pair's blocks (log ratios; the noise within a pair).
    pair_blocks: tuple[tuple[float, ...], ...] | None = None
    #: The change's two-sided interval at ``level`` (as changes: -0.02 = 2% faster).
    interval: tuple[float, float] | None = None
    #: The two-sided level the interleaved verdict was judged at (family level over the
    #: benchmarks of the family at this step of Holm's method).
    level: float | None = None
    #: How many benchmarks the family held when this verdict was judged.
    family: int | None = None
    #: Holm-adjusted p-value (once the run's family was judged).
    adjusted_p: float | None = None
    #: A stored-baseline regression that does not fail the run (the stored mode misses
    #: its targets: :data:`STORED_MEASURED`); ``--gpu-bench-compare-fails`` fails on it.
    advisory: bool = False
    #: ``--gpu-bench-compare`` at the process level: the log summary of each stored
    #: process and of each process of this run (the evidence, :mod:`.stored`).
    process_figures: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    #: ``--gpu-bench-against``: the pairs done at each look taken (one entry: a single
    #: look), the share of the level the last look spent (:mod:`.sequential`), why the
    #: looks stopped (``decided``, ``budget``, ``last look``), the schedule (first,
    #: step, max_looks) and the budget in seconds.
    looks: tuple[int, ...] | None = None
    look_share: float = 1.0
    stopped: str = ""
    schedule: dict[str, int] | None = None
    budget: float | None = None
    #: How the measured processes' CPUs and thread pools were held, in words.
    pinning: str = ""
    #: The seed of the random placement offsets of the measured processes.
    placement_seed: int | None = None

    @property
    def change(self) -> float | None:
        """Relative change (+0.10 = 10% slower): of the median ratio to the reference
        when there is one, else of the median time."""
        if self.relative_change is not None:
            return self.relative_change
        if self.baseline_median is None or self.new_median is None or self.baseline_median <= 0:
            return None
        return self.new_median / self.baseline_median - 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "device": self.device,
            "status": self.status,
            "baseline_median": self.baseline_median,
            "new_median": self.new_median,
            "change": self.change,
            "pvalue": self.pvalue,
            "pair_figures": list(self.pair_figures) if self.pair_figures else None,
            "pair_blocks": [list(b) for b in self.pair_blocks] if self.pair_blocks else None,
            "interval": list(self.interval) if self.interval else None,
            "level": self.level,
            "family": self.family,
            "adjusted_p": self.adjusted_p,
            "advisory": self.advisory,
            "process_figures": [list(side) for side in self.process_figures]
            if self.process_figures else None,
            "looks": list(self.looks) if self.looks else None,
            "look_share": self.look_share,
            "stopped": self.stopped,
            "schedule": self.schedule,
            "budget": self.budget,
            "pinning": self.pinning,
            "placement_seed": self.placement_seed,
            "alpha": self.settings.alpha,
            "min_effect": self.settings.min_effect,
            "relative_min_effect": self.settings.relative_min_effect,
            "keep_fraction": self.settings.keep_fraction,
            "reason": self.reason,
            "relative_to": self.relative_to,
            "relative_change": self.relative_change,
            "noise": self.noise,
            "power": self.power,
            "detect_effect": self.settings.detect_effect,
            "power_target": self.settings.power,
        }


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
    mismatch = _mismatch(baseline, current)
    if mismatch:
        return replace(base, status="not-comparable", baseline_median=baseline.median,
                       reason=mismatch)
    modes = baseline.extra.get("process_mode"), current.extra.get("process_mode")
    if not cross_mode and modes[0] and modes[1] and modes[0] != modes[1]:
        return replace(base, status="not-comparable", baseline_median=baseline.median,
                       reason=cross_mode_refusal(str(modes[0]), str(modes[1])))
    rounds = min(len(baseline.samples), len(current.samples))
    if rounds < settings.min_rounds:
        return replace(base, status="not-comparable",
                       reason=f"{rounds} rounds < min_rounds={settings.min_rounds}")
    note = "; ".join(n for n in (_version_note(baseline, current),
                                 _mode_note(baseline, current),
                                 _faults_note(baseline, current)) if n)
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


def compared_values(record: BenchmarkRecord, settings: GateSettings,
                    relative: bool) -> list[float]:
    """What the gate compares of one record: the ratios to the reference per pair of
    rounds (:func:`pair_means`), or the fastest ``keep_fraction`` of the times."""
    return pair_means(record.ratios) if relative else settings.kept(record.samples)


def pair_means(ratios: list[float]) -> list[float]:
    """Geometric means of consecutive pairs of per-round ratios (a last odd round is left).

    The reference runs before the benchmark in even rounds and after it in odd
    ones, so neither always runs in the other's wake; but the order itself moves
    the ratio (what the previous call left in the caches: 17% between even and odd
    rounds of a 6 MiB saxpy on a CPU).  A pair holds one round of each order, so
    its mean is free of that alternation, which would otherwise count as noise
    (and make the gate ask for about twice the rounds).
    """
    logs = np.log(np.asarray(ratios[: len(ratios) // 2 * 2], dtype=np.float64))
    return [float(v) for v in np.exp(logs.reshape(-1, 2).mean(axis=1))]


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


#: What an interleaved comparison is relative to (``Verdict.relative_to``).
INTERLEAVED = "the baseline checkout timed round by round beside it"


def interleaved_blocks(baseline: list[float], current: list[float]) -> list[float]:
    """The log ratios candidate / baseline an interleaved comparison tests, one per block
    of two pairs of rounds.

    Round ``k`` of each side ran next to round ``k`` of the other, the pair's starting
    side first in even pairs of rounds and second in odd ones (the order alone moves a
    round: what the other side left in the caches).  A block holds one pair of each
    order, and each side's two rounds of a block follow one baseline round and one
    candidate round (:func:`~.interleave.pair_rounds`), so its mean is free of that
    alternation (as :func:`pair_means` for a reference).
    """
    count = min(len(baseline), len(current))
    ratios = [c / b for c, b in zip(current[:count], baseline[:count], strict=True)]
    return [math.log(v) for v in pair_means(ratios)]


def pair_figures(baseline: BenchmarkRecord, current: BenchmarkRecord) -> list[list[float]]:
    """The blocks' log ratios of each pair of processes, in ``replicates`` equal runs."""
    replicates = max(1, int(current.extra.get("replicates") or 1))
    per = min(len(baseline.samples), len(current.samples)) // replicates
    return [interleaved_blocks(baseline.samples[j * per:(j + 1) * per],
                               current.samples[j * per:(j + 1) * per])
            for j in range(replicates)]


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
    mismatch = _mismatch(baseline, current)
    if mismatch:
        return replace(base, reason=mismatch)
    runs = pair_figures(baseline, current)
    if len(runs) < 2 or not all(runs):
        return replace(base, reason=f"{len(runs)} pair(s) of processes with timed blocks; "
                                    "the gate needs at least 2 (ini gpu_bench_replicates)")
    figures = tuple(float(statistics.median(run)) for run in runs)
    verdict = replace(base, pair_figures=figures, pair_blocks=tuple(map(tuple, runs)),
                      reason=_version_note(baseline, current),
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


def pair_figures_of(baseline: list[float], current: list[float], per: int) -> list[float]:
    """The pair figures (median block log ratio of each pair) of the rounds so far, ``per``
    rounds per side per pair."""
    return [statistics.median(blocks) for j in range(min(len(baseline), len(current)) // per)
            if (blocks := interleaved_blocks(baseline[j * per:(j + 1) * per],
                                             current[j * per:(j + 1) * per]))]


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


def as_change(log_ratio: float) -> float:
    """A log ratio as a change (+0.10 = 10% slower); an interval's end from few pairs at a
    strict level can be beyond any float (+inf)."""
    return math.expm1(log_ratio) if log_ratio < 700.0 else math.inf


#: The largest change an interval's end is printed as a number: from two or three
#: pairs at a strict level an end can be +1e79%, which reads as a bug, not a bound.
PRINTED_CHANGE_LIMIT = 10.0


def format_interval(low: float, high: float, level: float) -> str:
    """``[99.97% CI -3.0%, +5.5%]``; an end beyond +1000% says so instead of its digits."""
    def end(change: float) -> str:
        return f"{change:+.1%}" if change <= PRINTED_CHANGE_LIMIT else "above +1000%"
    return f"[{format_level(level)} CI {end(low)}, {end(high)}]"


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
    test = pair_test(verdict.pair_figures or (), spent)
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
    if test.low > 0.0 and test.mean > floor:
        return replace(judged, status="regression")
    if test.high < 0.0 and test.mean < -floor:
        return replace(judged, status="improvement")
    if power < settings.power:
        why = (f"the between-pair SD {test.sd:.1%} over {test.pairs} pairs leaves {power:.0%} "
               f"power to catch +{settings.design_effect(True):.0%} at this level (target "
               f"{settings.power:.0%}); {_advice(verdict, test.sd, level, floor, shift)}")
        return replace(judged, status="inconclusive", reason=f"{why}; {note}" if note else why)
    return judged


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
        stop = ("stopped for the budget" if verdict.stopped == "budget"
                else "stopped at the schedule's last look")
        return (f"{stop} after {looks}: a decision needs {total}, more than the {reach} the "
                f"schedule's last look reaches, so a larger budget would not decide it; {fix}")
    needs = f"a decision needs about {more} more pairs"
    if verdict.stopped == "budget":
        budget = f"{verdict.budget:g} s" if verdict.budget is not None else "its"
        return (f"stopped for the budget ({budget} per benchmark) after {looks}: {needs}; "
                f"raise ini gpu_bench_budget, {_QUIETER}")
    return (f"stopped at the schedule's last look ({looks}): {needs}; raise ini "
            f"gpu_bench_replicates, {_QUIETER}")


def progress_line(name: str, number: int, benchmarks: int, done: int, pairs: int,
                  baseline: list[float], current: list[float], per: int, level: float,
                  share: float = 1.0) -> str:
    """``gpucheck gate: benchmark 2 of 30 (NAME): 4 of 10 pairs done, change so far +1.2%
    [99.97% CI -3.0%, +5.5%]``: where a long interleaved run stands, with the interval
    of the pairs so far at the level the benchmark will be judged at."""
    text = f"gpucheck gate: benchmark {number} of {benchmarks} ({name}): {done} of {pairs} " \
           "pairs done"
    figures = pair_figures_of(baseline[:done * per], current[:done * per], per)
    if len(figures) >= 2:
        level = level * share
        test = pair_test(figures, level)
        text += (f", change so far {as_change(test.mean):+.1%} "
                 f"{format_interval(as_change(test.low), as_change(test.high), level)}")
    return text


#: The statuses of a comparison that was made (the family counts them).
JUDGED = ("regression", "improvement", "unchanged", "inconclusive")


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


def _version_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """A note when the framework's version changed since the baseline (compared all the
    same: a new version is a common cause of a regression, and worth naming)."""
    old = baseline.environment.framework_version
    new = current.environment.framework_version
    if old != new:
        return f"baseline recorded with {current.backend} {old}, this run {new}"
    return ""


def _mode_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """A note when another kind of process measured the stored baseline: the two have
    different heap histories, which alone moved identical code by +49% (an in-process
    baseline compared in an isolation worker)."""
    old = baseline.extra.get("process_mode")
    new = current.extra.get("process_mode")
    if old and new and old != new:
        return (f"baseline measured {_WHERE.get(old, old)}, this run {_WHERE.get(new, new)}: "
                "different heap histories alone moved identical code by +49%")
    return ""


#: Page faults per call that differ by more than this factor between the two sides (and
#: by at least one per call) are named in a stored verdict.
FAULTS_FACTOR = 2.0


def _faults_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """A note when the two sides paid different page faults per call: a fresh mapping
    per call (another process mode, allocator or array size) costs time that is not
    the kernel's (65 faults made a 2^16 saxpy 78 us instead of 14 us)."""
    old = baseline.extra.get("page_faults_per_call")
    new = current.extra.get("page_faults_per_call")
    if old is None or new is None:
        return ""
    old, new = float(old), float(new)
    low, high = sorted((old, new))
    if high - low < 1.0 or high <= FAULTS_FACTOR * low:
        return ""
    return (f"page faults per call: baseline {old:.0f}, this run {new:.0f} (memory mapped "
            "afresh on each call on one side: part of the change may be that, not the "
            "kernel)")


def cross_mode_refusal(stored: str, current: str) -> str:
    """The one line that refuses a stored baseline measured in another process mode."""
    return (f"the stored baseline was measured {_WHERE.get(stored, stored)} ({stored}), this "
            f"run measures {_WHERE.get(current, current)} ({current}): different heap "
            "histories alone moved identical code by +49%; record the baseline with "
            "--gpu-bench-save under the same --gpu-isolate, -n and backends as this run, "
            "or add --gpu-bench-cross-mode to compare across modes all the same")


#: Where a process mode measured, in a sentence.
_WHERE = {"in-process": "in the test process", "isolation worker": "in an isolation worker",
          "xdist worker": "in an xdist worker", "MPI rank": "in an MPI rank",
          "simulator child": "in the simulator child"}


def smallest_pvalue(n1: int, n2: int) -> float:
    """The two-sided p-value of complete separation: no sample of this size gets lower."""
    return mann_whitney_u(np.arange(n1) + n2, np.arange(n2)).pvalue


def _mismatch(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """Why the two records measure different things, or ""."""
    pairs = [
        ("device model", baseline.environment.device_model, current.environment.device_model),
        ("backend", baseline.backend, current.backend),
        ("timing method", baseline.method, current.method),
        ("L2 flush", baseline.l2_flushed, current.l2_flushed),
    ]
    for what, old, new in pairs:
        if old != new:
            return f"{what} differs: baseline {old!r}, this run {new!r}"
    return ""


def parse_override_line(line: str) -> tuple[str, dict[str, str]]:
    """Parse an ini override line ``PATTERN key=value [key=value ...]``."""
    pattern, *assignments = line.split()
    settings = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not value:
            raise ValueError(f"gpu_bench_overrides line {line!r}: expected key=value, "
                             f"got {assignment!r}")
        settings[key] = value
    return pattern, settings


def settings_for(
    name: str, default: GateSettings, ini_overrides: list[str], marker_kwargs: dict[str, Any]
) -> GateSettings:
    """Gate settings for benchmark ``name``: ini lines matching it, then its marker."""
    settings = default
    for line in ini_overrides:
        if not line.strip():
            continue
        pattern, overrides = parse_override_line(line)
        if fnmatch.fnmatchcase(name, pattern):
            settings = settings.with_overrides(overrides)
    if marker_kwargs:
        settings = settings.with_overrides(marker_kwargs)
    return settings


#: What docs/benchmarks.md measured of the stored mode on a shared 2-core machine (200
#: A/A and 200 slowed comparisons per size): it misses the targets of 1% false alarms
#: and 90% of 10% slowdowns caught, so its regressions are advisory by default.
STORED_MEASURED = ("measured false alarms 5.0% and 2.5%, 10% slowdowns caught 89% and "
                   "75.5% (targets 1% and 90%, docs/benchmarks.md)")

#: The end of an advisory regression's line: why it does not fail, and how to make it.
ADVISORY_NOTE = (f"advisory: the stored mode misses its targets ({STORED_MEASURED}), so this "
                 "does not fail the run; --gpu-bench-compare-fails makes it fail, "
                 "--gpu-bench-against is the gate that meets them")


def brief_verdict(verdict: Verdict) -> str | None:
    """``UNCHANGED NAME [numpy on DEVICE], change -0.6% [99.97% CI -5.1%, +4.2%], 10
    pairs``: the change and interval of a verdict the summary does not print whole (an
    unchanged one), at the level it was judged at; ``None`` without an interval."""
    if verdict.change is None or verdict.interval is None:
        return None
    if verdict.pair_figures:
        level = (verdict.level or 0.0) * verdict.look_share
        count = f"{len(verdict.pair_figures)} pairs"
    elif verdict.process_figures:
        level = verdict.level or 0.0
        old, new = verdict.process_figures
        count = f"{len(old)} + {len(new)} processes"
    else:
        return None
    low, high = verdict.interval
    return (f"{verdict.status.upper()} {verdict.name} [{verdict.backend} on {verdict.device}], "
            f"change {verdict.change:+.1%} {format_interval(low, high, level)}, {count}")


def format_verdict(verdict: Verdict) -> str:
    """One line: benchmark, backend, device, baseline median, new median, change, confidence."""
    status = verdict.status.upper() + (" (advisory)" if verdict.advisory else "")
    parts = [f"{status} {verdict.name} [{verdict.backend} on {verdict.device}]"]
    kept = ("" if verdict.settings.keep_fraction == 1.0 or verdict.relative_to == INTERLEAVED
            else f" (fastest {verdict.settings.keep_fraction:.0%} of rounds)")
    if verdict.pair_figures and verdict.interval is not None:
        return ", ".join([*parts, _pairs_summary(verdict)])
    if verdict.process_figures and verdict.interval is not None:
        return ", ".join([*parts, processes_summary(verdict)])
    if verdict.baseline_median is not None:
        parts.append(f"baseline median{kept} {format_seconds(verdict.baseline_median)}")
    if verdict.new_median is not None:
        parts.append(f"new median {format_seconds(verdict.new_median)}")
    if verdict.change is not None:
        against = (f" against {verdict.relative_to}" if verdict.relative_to == INTERLEAVED
                   else f" relative to an interleaved {verdict.relative_to}"
                   if verdict.relative_to else "")
        parts.append(f"change {verdict.change:+.1%}{against}")
    if verdict.pvalue is not None:
        effect = verdict.settings.relative_min_effect if verdict.relative_to \
            else verdict.settings.min_effect
        parts.append(f"p={verdict.pvalue:.2g} (alpha={verdict.settings.alpha:g}, "
                     f"min effect {effect:.0%})")
        if verdict.adjusted_p is not None:
            parts.append(f"Holm-adjusted p={verdict.adjusted_p:.2g} over {verdict.family} "
                         "benchmarks")
    power = _power_text(verdict, verdict.settings.design_effect(bool(verdict.relative_to)))
    if power:
        parts.append(power.removeprefix(", "))
    if verdict.reason:
        parts.append(verdict.reason)
    if verdict.advisory:
        parts.append(ADVISORY_NOTE)
    return ", ".join(parts)


def format_level(level: float) -> str:
    """The confidence of an interval at two-sided ``level``: ``99%``, ``99.967%``."""
    confidence = 100.0 * (1.0 - level)
    # The fewest digits that give the level itself to 1%: 99%, 99.75%, 99.967%.
    for digits in range(0, 10):
        text = f"{confidence:.{digits}f}"
        if float(text) < 100.0 and abs(float(text) - confidence) <= 0.01 * 100.0 * level:
            return text + "%"
    return f"{confidence:.10g}%"


def _pairs_summary(verdict: Verdict) -> str:
    """``change +8.3% [99% CI +3.1%, +13.8%], 8 pairs, between-pair SD 3.9%, ...``: the
    figures an interleaved verdict was computed from, and nothing that contradicts them."""
    assert verdict.interval is not None
    assert verdict.pair_figures is not None
    low, high = verdict.interval
    change = verdict.change or 0.0
    family = verdict.family or 1
    spent = (verdict.level or 0.0) * verdict.look_share
    text = (f"change {change:+.1%} {format_interval(low, high, spent)}, "
            f"{len(verdict.pair_figures)} pairs{_looks_text(verdict)}, "
            f"between-pair SD {verdict.noise or 0.0:.1%}, against {INTERLEAVED}")
    p = f"p={verdict.pvalue:.2g}" if verdict.pvalue is not None else ""
    if verdict.adjusted_p is not None:
        p += f", Holm-adjusted p={verdict.adjusted_p:.2g} over {family} benchmarks"
    elif family > 1:
        p += f" (level {verdict.level:.2g}: the family's over {family} benchmarks)"
    text += f", {p}, floor {verdict.settings.relative_min_effect:.0%}"
    text += _power_text(verdict, verdict.settings.design_effect(True))
    if verdict.pinning:
        text += f", {verdict.pinning}"
    if verdict.placement_seed is not None:
        text += f", placement seed {verdict.placement_seed}"
    if verdict.reason:
        text += f", {verdict.reason}"
    return text


def _power_text(verdict: Verdict, effect: float) -> str:
    """``, power 97% to catch +10%`` beside an UNCHANGED verdict only: there the power is
    what makes "unchanged" a decision (below the target it is INCONCLUSIVE, whose reason
    gives the figure).  A regression or an improvement was decided by its interval; the
    chance of catching a +10% change says nothing about it, and "power 1% to catch
    +10%" beside a REGRESSION of +50% read as a contradiction (issue 43)."""
    if verdict.power is None or verdict.status != "unchanged":
        return ""
    return f", power {verdict.power:.0%} to catch +{effect:.0%}"


def _looks_text(verdict: Verdict) -> str:
    """`` in 2 looks (the last at 1/8 of the level; stopped for the budget)``: how the
    sequential looks went, when there was more than one or they stopped early."""
    if not verdict.looks or (len(verdict.looks) == 1 and verdict.stopped == "decided"):
        return ""
    taken = len(verdict.looks)
    why = {"decided": "decided", "budget": "stopped for the budget",
           "last look": "the schedule's last look"}.get(verdict.stopped, verdict.stopped)
    return (f" in {taken} look{'s' if taken > 1 else ''} (the last at {verdict.look_share:.3g} "
            f"of the level; {why})")


def format_seconds(seconds: float) -> str:
    """``12.3 us``, ``4.56 ms``, ``1.20 s``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


#: What ``scripts/measure_gate.py --mode stored`` measured of this gate at its defaults
#: on a shared 2-core machine (docs/benchmarks.md): printed with an advisory verdict.
PROCESS_MEASURED = ("measured at 5 processes a side, load 18 to 124: identical benchmarks "
                    "flagged in 3 of 11 runs, 5 of 33 comparisons; 10% slowdowns caught in "
                    "10 of 11 (targets 1% and 90%, docs/benchmarks.md)")


def advisory_note() -> str:
    """The end of an advisory process-level regression's line."""
    return (f"advisory: the stored mode misses its targets ({PROCESS_MEASURED}), so this "
            "does not fail the run; --gpu-bench-compare-fails makes it fail, "
            "--gpu-bench-against is the gate that meets them")


def processes_summary(verdict: Verdict) -> str:
    """``change +8.3% [99.9% CI +3.1%, +13.8%], 5 + 5 processes, between-process SD
    2.9%, ...``: the figures a process-level verdict was computed from."""
    assert verdict.interval is not None
    assert verdict.process_figures is not None
    old, new = verdict.process_figures
    low, high = verdict.interval
    family = verdict.family or 1
    text = (f"change {verdict.change or 0.0:+.1%} "
            f"{format_interval(low, high, verdict.level or 0.0)}, "
            f"{len(old)} + {len(new)} processes, between-process "
            f"SD {verdict.noise or 0.0:.1%}, against the stored baseline (geometric means "
            f"of the processes' medians: baseline {format_seconds(verdict.baseline_median or 0.0)}"
            f", this run {format_seconds(verdict.new_median or 0.0)})")
    text += f", p={verdict.pvalue:.2g}" if verdict.pvalue is not None else ""
    if verdict.adjusted_p is not None:
        text += f", Holm-adjusted p={verdict.adjusted_p:.2g} over {family} benchmarks"
    elif family > 1:
        text += f" (level {verdict.level:.2g}: the family's over {family} benchmarks)"
    text += f", floor {verdict.settings.min_effect:.0%}"
    text += _power_text(verdict, verdict.settings.design_effect(False))
    if verdict.reason:
        text += f", {verdict.reason}"
    if verdict.advisory:
        text += f", {advisory_note()}"
    return text
