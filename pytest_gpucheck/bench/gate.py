"""The regression gate: does a run differ from its baseline, really?

A benchmark is a *regression* when both hold:

1. the Mann-Whitney U test on the per-round samples rejects "same
   distribution" at level ``alpha`` (strict by default, as in asv), and
2. the median got slower by more than ``min_effect`` (a fraction: 0.07 = 7%;
   ``relative_min_effect``, 5%, for ratios to a reference, below).

**Relative to a reference.**  When both records carry a calibration
workload timed beside every round (``reference_samples``: by default a
device copy of the bytes the benchmark declares), the gate compares the
per-round ratios benchmark / reference instead of the times: a machine-wide
slowdown between the two runs (memory contention from another tenant, a
clock change) slows the copy alike and cancels, a change of the benchmark's
own code does not.  Every round's ratio is used: contention that hits only
one member of a pair moves the ratio either way, so no tail is dropped.
Without a reference on both sides the gate compares the times as they are:

Both look at the fastest ``keep_fraction`` of each side's rounds (half by
default).  Contention on a shared machine (other processes, cache thrashing
by neighbours, preemption) only ever *adds* time, and it comes and goes in
bursts longer than a round: on a busy 2-core CI machine the median of all
rounds moved by -50%..+140% between two identical runs, while the median of
the fastest half stayed within about +-7% (``scripts/measure_gate.py``).  The
fast rounds measure the code; the slow tail measures the neighbours.

The test alone flags tiny shifts once there are many rounds (a shared machine
drifts by a few percent between runs); the effect size alone trips on a noisy
median.  Together they fail only on changes that are both real and large
enough to matter.  An improvement (faster by more than ``min_effect``, and
significant) is reported, never failed.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from .records import BenchmarkRecord
from .settings import (
    DEFAULT_ALPHA,
    DEFAULT_KEEP_FRACTION,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_ROUNDS,
    DEFAULT_RELATIVE_MIN_EFFECT,
    SETTING_NAMES,
)
from .stats import mann_whitney_u

Status = Literal["regression", "improvement", "unchanged", "no-baseline", "not-comparable"]



@dataclass(frozen=True)
class GateSettings:
    """Thresholds of the gate for one benchmark."""

    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    min_rounds: int = DEFAULT_MIN_ROUNDS
    keep_fraction: float = DEFAULT_KEEP_FRACTION
    #: ``min_effect`` of a comparison relative to an interleaved reference.
    relative_min_effect: float = DEFAULT_RELATIVE_MIN_EFFECT

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

    @property
    def change(self) -> float | None:
        """Relative change (+0.10 = 10% slower): of the median ratio to the reference
        when there is one, else of the median time."""
        if self.relative_change is not None:
            return self.relative_change
        if self.baseline_median is None or self.new_median is None or self.baseline_median <= 0:
            return None
        return self.new_median / self.baseline_median - 1.0

    @property
    def confidence(self) -> float | None:
        """1 - p: how sure the test is that the two runs differ."""
        return None if self.pvalue is None else 1.0 - self.pvalue

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
            "confidence": self.confidence,
            "alpha": self.settings.alpha,
            "min_effect": self.settings.min_effect,
            "relative_min_effect": self.settings.relative_min_effect,
            "keep_fraction": self.settings.keep_fraction,
            "reason": self.reason,
            "relative_to": self.relative_to,
            "relative_change": self.relative_change,
        }


def compare(
    baseline: BenchmarkRecord | None, current: BenchmarkRecord, settings: GateSettings
) -> Verdict:
    """Decide whether ``current`` regressed against ``baseline``."""
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
    rounds = min(len(baseline.samples), len(current.samples))
    if rounds < settings.min_rounds:
        return replace(base, status="not-comparable",
                       reason=f"{rounds} rounds < min_rounds={settings.min_rounds}")
    note = _version_note(baseline, current)
    relative = bool(baseline.ratios and current.ratios
                    and baseline.reference == current.reference)
    old, new = settings.kept(baseline.samples), settings.kept(current.samples)
    tested_old, tested_new = (baseline.ratios, current.ratios) if relative else (old, new)
    floor = smallest_pvalue(len(tested_new), len(tested_old))
    if floor >= settings.alpha:
        return replace(base, status="not-comparable", reason=(
            f"{len(tested_new)} vs {len(tested_old)} compared rounds cannot reach alpha="
            f"{settings.alpha:g} (smallest possible p {floor:.2g}); time more rounds "
            "(ini gpu_bench_rounds)"))
    test = mann_whitney_u(tested_new, tested_old)
    verdict = replace(base, status="unchanged", pvalue=test.pvalue, reason=note,
                      baseline_median=float(np.median(old)), new_median=float(np.median(new)))
    if relative:
        verdict = replace(verdict, relative_to=current.reference, relative_change=float(
            np.median(tested_new) / np.median(tested_old) - 1.0))
    change = verdict.change or 0.0
    threshold = settings.relative_min_effect if relative else settings.min_effect
    if test.pvalue < settings.alpha and abs(change) > threshold:
        return replace(verdict, status="regression" if change > 0 else "improvement")
    return verdict


def _version_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """A note when the framework's version changed since the baseline (compared all the
    same: a new version is a common cause of a regression, and worth naming)."""
    old = baseline.environment.framework_version
    new = current.environment.framework_version
    if old != new:
        return f"baseline recorded with {current.backend} {old}, this run {new}"
    return ""


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


def format_verdict(verdict: Verdict) -> str:
    """One line: benchmark, backend, device, baseline median, new median, change, confidence."""
    parts = [f"{verdict.status.upper()} {verdict.name} [{verdict.backend} on {verdict.device}]"]
    kept = ("" if verdict.settings.keep_fraction == 1.0
            else f" (fastest {verdict.settings.keep_fraction:.0%} of rounds)")
    if verdict.baseline_median is not None:
        parts.append(f"baseline median{kept} {format_seconds(verdict.baseline_median)}")
    if verdict.new_median is not None:
        parts.append(f"new median {format_seconds(verdict.new_median)}")
    if verdict.change is not None:
        against = f" relative to an interleaved {verdict.relative_to}" if verdict.relative_to \
            else ""
        parts.append(f"change {verdict.change:+.1%}{against}")
    if verdict.confidence is not None:
        effect = verdict.settings.relative_min_effect if verdict.relative_to \
            else verdict.settings.min_effect
        parts.append(f"confidence {verdict.confidence:.6f} (p={verdict.pvalue:.2g}, "
                     f"alpha={verdict.settings.alpha:g}, min effect {effect:.0%})")
    if verdict.reason:
        parts.append(verdict.reason)
    return ", ".join(parts)


def format_seconds(seconds: float) -> str:
    """``12.3 us``, ``4.56 ms``, ``1.20 s``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
