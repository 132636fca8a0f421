"""Every line of the gate a user reads: a verdict's line and its brief form, the
figures' text (seconds, levels, intervals), the progress line of a long interleaved
run, and the notes and refusals a comparison of two records gives (another framework
version, process mode, page faults, device or timing method)."""

from __future__ import annotations

from pytest_gpucheck.bench.gate.figures import as_change, interval_of, pair_figures_of
from pytest_gpucheck.bench.gate.verdict import INTERLEAVED, Verdict
from pytest_gpucheck.bench.records import BenchmarkRecord


def version_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """A note when the framework's version changed since the baseline (compared all the
    same: a new version is a common cause of a regression, and worth naming)."""
    old = baseline.environment.framework_version
    new = current.environment.framework_version
    if old != new:
        return f"baseline recorded with {current.backend} {old}, this run {new}"
    return ""


def mode_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
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


def faults_note(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
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


def mismatch(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
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


def record_notes(baseline: BenchmarkRecord, current: BenchmarkRecord) -> str:
    """The notes a stored comparison of two records carries, joined (or "")."""
    return "; ".join(n for n in (version_note(baseline, current),
                                 mode_note(baseline, current),
                                 faults_note(baseline, current)) if n)


#: The largest change an interval's end is printed as a number: from two or three
#: pairs at a strict level an end can be +1e79%, which reads as a bug, not a bound.
PRINTED_CHANGE_LIMIT = 10.0


def format_interval(low: float, high: float, level: float) -> str:
    """``[99.97% CI -3.0%, +5.5%]``; an end beyond +1000% says so instead of its digits."""
    def end(change: float) -> str:
        return f"{change:+.1%}" if change <= PRINTED_CHANGE_LIMIT else "above +1000%"
    return f"[{format_level(level)} CI {end(low)}, {end(high)}]"


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
        test = interval_of(figures, level)
        text += (f", change so far {as_change(test.mean):+.1%} "
                 f"{format_interval(as_change(test.low), as_change(test.high), level)}")
    return text


#: What docs/benchmark-evidence.md measured of the stored mode on a shared 2-core machine (200
#: A/A and 200 slowed comparisons per size): it misses the targets of 1% false alarms
#: and 90% of 10% slowdowns caught, so its regressions are advisory by default.
STORED_MEASURED = ("measured false alarms 5.0% and 2.5%, 10% slowdowns caught 89% and "
                   "75.5% (targets 1% and 90%, docs/benchmark-evidence.md)")

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
    spent = (verdict.level or 0.0) * verdict.look_share
    text = (f"change {change:+.1%} {format_interval(low, high, spent)}, "
            f"{len(verdict.pair_figures)} pairs{_looks_text(verdict)}, "
            f"between-pair SD {verdict.noise or 0.0:.1%}, against {INTERLEAVED}")
    p = f"p={verdict.pvalue:.2g}" if verdict.pvalue is not None else ""
    text += f", {p}{_family_text(verdict)}, floor {verdict.settings.relative_min_effect:.0%}"
    text += _power_text(verdict, verdict.settings.design_effect(True))
    if verdict.pinning:
        text += f", {verdict.pinning}"
    if verdict.placement_seed is not None:
        text += f", placement seed {verdict.placement_seed}"
    if verdict.reason:
        text += f", {verdict.reason}"
    return text


def _family_text(verdict: Verdict) -> str:
    """``, Holm-adjusted p=0.02 over 3 benchmarks`` once the run's family was judged,
    `` (level 0.0033: the family's over 3 benchmarks)`` before, "" for one benchmark."""
    family = verdict.family or 1
    if verdict.adjusted_p is not None:
        return f", Holm-adjusted p={verdict.adjusted_p:.2g} over {family} benchmarks"
    if family > 1:
        return f" (level {verdict.level:.2g}: the family's over {family} benchmarks)"
    return ""


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
#: on a shared 2-core machine (docs/benchmark-evidence.md, "Measuring the stored gate", the
#: file the printed line names): printed with an advisory verdict.
PROCESS_MEASURED = ("measured at 5 processes a side, load 18 to 124: identical benchmarks "
                    "flagged in 3 of 11 runs, 5 of 33 comparisons; 10% slowdowns caught in "
                    "10 of 11 (targets 1% and 90%, docs/benchmark-evidence.md)")


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
    text = (f"change {verdict.change or 0.0:+.1%} "
            f"{format_interval(low, high, verdict.level or 0.0)}, "
            f"{len(old)} + {len(new)} processes, between-process "
            f"SD {verdict.noise or 0.0:.1%}, against the stored baseline (geometric means "
            f"of the processes' medians: baseline {format_seconds(verdict.baseline_median or 0.0)}"
            f", this run {format_seconds(verdict.new_median or 0.0)})")
    text += f", p={verdict.pvalue:.2g}" if verdict.pvalue is not None else ""
    text += f"{_family_text(verdict)}, floor {verdict.settings.min_effect:.0%}"
    text += _power_text(verdict, verdict.settings.design_effect(False))
    if verdict.reason:
        text += f", {verdict.reason}"
    if verdict.advisory:
        text += f", {advisory_note()}"
    return text
