"""The regression gate: does a run differ from its baseline, really?

One module per role: :mod:`.settings` (every setting read, ini and overrides),
:mod:`.verdict` (the type and its serialisation), :mod:`.figures` (the numbers a
verdict is computed from), :mod:`.judge` (stored, interleaved and Holm, on one
decision rule) and :mod:`.format` (every line a user reads).  This face names what
the rest of the benchmark package uses.

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

from pytest_gpucheck.bench.gate.figures import (
    as_change,
    compared_values,
    interleaved_blocks,
    pair_figures,
    pair_figures_of,
    pair_means,
    smallest_pvalue,
)
from pytest_gpucheck.bench.gate.format import (
    ADVISORY_NOTE,
    PROCESS_MEASURED,
    STORED_MEASURED,
    advisory_note,
    brief_verdict,
    cross_mode_refusal,
    format_interval,
    format_level,
    format_seconds,
    format_verdict,
    mismatch,
    processes_summary,
    progress_line,
    record_notes,
)
from pytest_gpucheck.bench.gate.judge import (
    compare,
    compare_interleaved,
    decide,
    holm_members,
    judge_family,
    judge_pairs,
    judge_stored_family,
    look_decides,
    planned_rounds,
    sequential_fields,
    stored_first_step,
    undecided,
)
from pytest_gpucheck.bench.gate.settings import GateSettings, parse_override_line, settings_for
from pytest_gpucheck.bench.gate.verdict import INTERLEAVED, JUDGED, Status, Verdict

__all__ = [
    "ADVISORY_NOTE", "INTERLEAVED", "JUDGED", "PROCESS_MEASURED", "STORED_MEASURED",
    "GateSettings", "Status", "Verdict", "advisory_note", "as_change", "brief_verdict",
    "compare", "compare_interleaved", "compared_values", "cross_mode_refusal", "decide",
    "format_interval", "format_level", "format_seconds", "format_verdict", "holm_members",
    "interleaved_blocks", "judge_family", "judge_pairs", "judge_stored_family",
    "look_decides", "mismatch", "pair_figures", "pair_figures_of", "pair_means",
    "parse_override_line", "planned_rounds", "processes_summary", "progress_line",
    "record_notes", "sequential_fields", "settings_for", "smallest_pvalue",
    "stored_first_step", "undecided",
]
