"""Every figure printed beside a verdict agrees with it (issue 43).

"power 1% to catch +10%" printed beside a REGRESSION read as a contradiction: the
power is what makes UNCHANGED a decision, and is printed there only.  "a decision needs
about 42 more pairs; raise ini gpu_bench_budget" advised what the 30-pair schedule
cannot reach (and "about 3820 more pairs" on torch-cpu): the advice is capped at the
schedule's last look and says so.
"""

from __future__ import annotations

import math

import numpy as np
from test_bench_order import ENV

from pytest_gpucheck.bench.gate import (
    INTERLEAVED,
    GateSettings,
    Verdict,
    compare,
    format_verdict,
    judge_pairs,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.sequential import LookSchedule, more_pairs_needed
from pytest_gpucheck.bench.settings import DEFAULT_FAMILY_LEVEL


def pairs_verdict(figures: list[float], stopped: str = "decided",
                  looks: tuple[int, ...] | None = None) -> Verdict:
    """An interleaved verdict of these pair figures, judged at the family level over 30
    benchmarks, stopped as given after ``looks`` (one look of all the figures)."""
    looks = looks or (len(figures),)
    schedule = LookSchedule.for_pairs(10)
    probe = Verdict("t.py::test_k", "numpy", "AMD EPYC", "inconclusive",
                    settings=GateSettings(), relative_to=INTERLEAVED,
                    pair_figures=tuple(figures), looks=looks,
                    look_share=schedule.share(len(looks)), stopped=stopped,
                    schedule=schedule.as_dict(), budget=60.0)
    return judge_pairs(probe, DEFAULT_FAMILY_LEVEL / 30, 30)


def test_no_power_figure_beside_a_regression_or_an_improvement() -> None:
    rng = np.random.default_rng(1)
    # A large, noisy slowdown: decided by its interval, with little power at +10%.
    slow = pairs_verdict(list(math.log(1.5) + rng.normal(0.0, 0.12, 10)))
    assert slow.status == "regression", format_verdict(slow)
    assert slow.power is not None
    assert slow.power < 0.5  # the figure that used to be printed beside it
    assert "power" not in format_verdict(slow)
    fast = pairs_verdict(list(-math.log(1.5) + rng.normal(0.0, 0.12, 10)))
    assert fast.status == "improvement"
    assert "power" not in format_verdict(fast)
    same = pairs_verdict(list(rng.normal(0.0, 0.01, 10)))
    assert same.status == "unchanged"
    assert f"power {same.power:.0%} to catch +10%" in format_verdict(same)


def test_no_power_figure_beside_a_stored_regression() -> None:
    rng = np.random.default_rng(2)

    def record(scale: float) -> BenchmarkRecord:
        return BenchmarkRecord(name="t.py::test_k", environment=ENV, method="process",
                               samples=list(1e-3 * scale * np.exp(rng.normal(0, 0.01, 60))),
                               iterations=10, warmup_rounds=2, first_call_seconds=0.1,
                               l2_flushed=False)

    verdict = compare(record(1.0), record(1.5), GateSettings())
    assert verdict.status == "regression"
    assert "power" not in format_verdict(verdict)
    unchanged = compare(record(1.0), record(1.0), GateSettings())
    assert unchanged.status == "unchanged"
    assert "power" in format_verdict(unchanged)


def test_more_pairs_within_the_schedule_are_advised_as_a_budget() -> None:
    rng = np.random.default_rng(3)
    figures = list(rng.normal(0.0, 0.045, 10))
    verdict = pairs_verdict(figures, stopped="budget")
    assert verdict.status == "inconclusive", format_verdict(verdict)
    line = format_verdict(verdict)
    more = more_pairs_needed(verdict.noise or 0.0, 10, math.log(1.1),
                             DEFAULT_FAMILY_LEVEL / 30 * LookSchedule.for_pairs(10).share(2),
                             math.log(1.05), 0.9)
    assert more is not None
    assert 10 + more <= 30, more  # within the schedule's reach: a budget decides it
    assert f"a decision needs about {more} more pairs; raise ini gpu_bench_budget" in line


def test_more_pairs_than_the_schedule_reaches_are_never_advised_as_a_budget() -> None:
    """The broken twin was the old advice: "about N more pairs; raise ini
    gpu_bench_budget" for N the 30-pair schedule cannot reach."""
    rng = np.random.default_rng(4)
    figures = list(rng.normal(0.0, 0.10, 10))
    verdict = pairs_verdict(figures, stopped="budget")
    assert verdict.status == "inconclusive"
    line = format_verdict(verdict)
    assert "raise ini gpu_bench_budget" not in line, line
    assert "more than the 30 the schedule's last look reaches, so a larger budget would " \
           "not decide it; raise ini gpu_bench_replicates to about" in line, line
    # Far beyond the schedule (torch-cpu's 3820): no pair count is advice any more.
    wild = pairs_verdict(list(rng.normal(0.0, 0.6, 10)), stopped="budget")
    line = format_verdict(wild)
    assert "gpu_bench_replicates" not in line
    assert "raise ini gpu_bench_budget" not in line
    assert "gate a larger change here (ini gpu_bench_detect_effect) or run on a quieter " \
           "machine" in line, line
    # At the schedule's last look, the same cap.
    last = pairs_verdict(list(rng.normal(0.0, 0.10, 30)), stopped="last look",
                         looks=(10, 15, 20, 25, 30))
    assert last.status == "inconclusive"
    assert "stopped at the schedule's last look after 30 pairs in 5 looks: a decision " \
           "needs about" in format_verdict(last)
