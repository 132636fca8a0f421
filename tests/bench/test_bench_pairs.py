"""The interleaved gate's decision rule: process pairs are the unit, one family per run.

Every figure here is deterministic (fixed seeds): the simulations hold the rule to its
numbers without retrying, and a run of this module cannot fail by chance.

The simulated rounds have the variance components the gate meets (docs/benchmarks.md):
each pair of processes gets a placement offset per side (shared by every block that
pair times: the intra-class correlation the old pooled test ignored), each round noise
of its own and an order effect (the second of two runs in the other's wake).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_gpucheck.bench.baseline import BaselineStore
from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.fixture import MeasureDefaults
from pytest_gpucheck.bench.gate import (
    INTERLEAVED,
    GateSettings,
    Verdict,
    compare_interleaved,
    format_verdict,
    interleaved_blocks,
    judge_family,
    judge_pairs,
    progress_line,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.session import BenchSession
from pytest_gpucheck.bench.settings import DEFAULT_FAMILY_LEVEL, DEFAULT_REPLICATES
from pytest_gpucheck.bench.stats import (
    holm_levels,
    pair_power,
    pair_test,
    t_critical,
    t_two_sided_p,
)
from pytest_gpucheck.bench.summary import derived_figures, gate_terminal_lines

ENV = Environment("AMD EPYC", "", "", "", "numpy", "2.2", "3.11.9")
#: Rounds per side per pair at the defaults: 60 rounds over 10 pairs, 3 blocks each.
PER_PAIR = 6
#: Variance components (log units): placement per process and noise per round.  A pair's
#: figure then has an SD of 3.3% (RMS 3.4%) and a block 3.3% around its pair's median:
#: noisier than the A/A sessions measured on NumPy (RMS 2.1% between pairs, 2.9% per
#: block; docs/benchmarks.md), so the power held here is on the safe side.
PLACEMENT = 0.02
ROUND_NOISE = 0.03


def records(rng: np.random.Generator, slowdown: float, pairs: int = DEFAULT_REPLICATES,
            placement: float = PLACEMENT, noise: float = ROUND_NOISE, per_pair: int = PER_PAIR,
            ) -> tuple[BenchmarkRecord, BenchmarkRecord]:
    """A baseline and a candidate record as ``--gpu-bench-against`` makes them."""
    offsets = np.repeat(rng.normal(0.0, placement, (2, pairs)), per_pair, axis=1)
    # The second of each pair of rounds runs in the other side's wake (+15%).
    wake = np.tile([[0.0, 0.15], [0.15, 0.0]], (pairs * per_pair // 2, 1)).T
    times = 1e-4 * np.exp(offsets + wake + rng.normal(0.0, noise, offsets.shape))
    base, cand = list(times[0]), list(times[1] * (1 + slowdown))
    extra = {"replicates": pairs}
    made = [BenchmarkRecord(name="t.py::test_k", environment=ENV, method="process",
                            samples=samples, iterations=10, warmup_rounds=2,
                            first_call_seconds=0.1, l2_flushed=False, extra=dict(extra))
            for samples in (base, cand)]
    return made[0], made[1]


def session(rng: np.random.Generator, benchmarks: int, slowed: int | None = None,
            slowdown: float = 0.10) -> list[Verdict]:
    """One run's verdicts, judged as the plugin does: each at the family's level over the
    benchmarks collected as its test ends, then the run's family by Holm's method."""
    verdicts = []
    for k in range(benchmarks):
        base, cand = records(rng, slowdown if k == slowed else 0.0)
        verdict = compare_interleaved(base, cand, GateSettings(),
                                      level=DEFAULT_FAMILY_LEVEL / benchmarks, family=benchmarks)
        verdicts.append(dataclasses.replace(verdict, name=f"t.py::test_{k}"))
    return judge_family(verdicts, DEFAULT_FAMILY_LEVEL)


# -- the distributions, against SciPy ------------------------------------------------
@pytest.mark.parametrize("df", [1, 2, 5, 9, 29])
def test_students_t_agrees_with_scipy(df: int) -> None:
    for t in (0.0, 0.3, 1.0, 2.5, 6.0, 40.0):
        assert t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(t, df), rel=1e-9,
                                                     abs=1e-300)
    for level in (0.5, 0.05, 0.01, 1e-4, 1e-7):
        assert t_critical(level, df) == pytest.approx(scipy_stats.t.isf(level / 2, df),
                                                      rel=1e-8)


@pytest.mark.parametrize(("sigma", "pairs", "level"), [
    (0.02, 6, 0.01), (0.04, 10, 0.01 / 30), (0.045, 12, 0.01 / 50), (0.03, 3, 0.01)])
def test_the_power_figure_is_the_noncentral_t_tail(sigma: float, pairs: int,
                                                   level: float) -> None:
    """Without the floor the power is the non-central t's upper tail (SciPy's ``nct``);
    with it, never more."""
    shift = math.log(1.1)
    nct = scipy_stats.nct.sf(scipy_stats.t.isf(level / 2, pairs - 1), pairs - 1,
                             shift / (sigma / math.sqrt(pairs)))
    assert pair_power(sigma, pairs, shift, level, 0.0) == pytest.approx(nct, abs=2e-4)
    assert pair_power(sigma, pairs, shift, level, math.log(1.05)) <= nct + 2e-4


def test_the_interval_and_the_p_value_agree() -> None:
    figures = [0.08, 0.05, 0.11, 0.07, 0.09, 0.06, 0.10, 0.04]
    test = pair_test(figures, 0.01)
    expected = scipy_stats.ttest_1samp(figures, 0.0)
    assert test.pvalue == pytest.approx(expected.pvalue, rel=1e-9)
    low, high = expected.confidence_interval(0.99)
    assert (test.low, test.high) == pytest.approx((low, high), rel=1e-9)
    # The interval excludes 0 exactly when p is at most the level.
    assert pair_test(figures, test.pvalue * 1.001).low > 0.0
    assert pair_test(figures, test.pvalue * 0.999).low < 0.0


def test_holms_levels_and_adjusted_p_values() -> None:
    p = [0.001, 0.02, 0.004, 0.5]
    levels, adjusted = holm_levels(p, 0.01)
    # Sorted: 0.001 <= 0.01/4 rejected; 0.004 > 0.01/3 stops; the rest at 0.01/3.
    assert levels == pytest.approx([0.0025, 0.01 / 3, 0.01 / 3, 0.01 / 3])
    assert adjusted == pytest.approx([0.004, 0.04, 0.012, 0.5])
    assert [q <= 0.01 for q in adjusted] == [pv <= lv for pv, lv in zip(p, levels, strict=True)]


# -- the rule on simulated runs ------------------------------------------------------
def test_a_pair_offset_shared_by_its_blocks_fooled_the_pooled_test_not_the_pair_test() -> None:
    """The broken design this replaces: the signed-rank test over every block of every
    pair (30 blocks from 6 pairs) treats blocks that share a pair's placement as
    independent.  At a placement SD of 4.5% per process it rejects identical code far
    more often than its level (0.001): 37 of 300; the pair test at the same level: 0."""
    rng = np.random.default_rng(7)
    pooled = paired = 0
    for _ in range(300):
        base, cand = records(rng, 0.0, pairs=6, placement=0.045, noise=0.02, per_pair=10)
        per = len(base.samples) // 6
        runs = [interleaved_blocks(base.samples[j * per:(j + 1) * per],
                                   cand.samples[j * per:(j + 1) * per]) for j in range(6)]
        pooled += scipy_stats.wilcoxon([b for run in runs for b in run], correction=True,
                                   method="approx").pvalue < 0.001
        paired += pair_test([float(np.median(run)) for run in runs], 0.001).low > 0.0
    assert pooled >= 30  # 12% of identical runs: 120 times the level
    assert paired <= 1


@pytest.mark.slow  # a simulation of many runs: left out of the fast loop
def test_at_the_default_pairs_identical_runs_of_30_benchmarks_rarely_fail() -> None:
    """200 runs of 30 identical benchmarks (6,000 comparisons): the family's design says
    at most 1% of runs fail; the floor makes it rarer still.  Measured: 0 runs."""
    rng = np.random.default_rng(2026)
    failed_runs = flagged = 0
    for _ in range(200):
        statuses = [v.status for v in session(rng, 30)]
        flagged += statuses.count("regression")
        failed_runs += "regression" in statuses
    assert failed_runs <= 2  # 1% of 200
    assert flagged <= 2


@pytest.mark.slow  # a simulation of many runs: left out of the fast loop
def test_at_the_default_pairs_a_10_percent_slowdown_among_30_is_caught() -> None:
    """100 runs of 30 benchmarks, one of them 10% slower: caught (and named) in at least
    90% of runs, with nothing else flagged.  Measured: 98 of 100 (2 inconclusive)."""
    rng = np.random.default_rng(11)
    caught = others = 0
    for _ in range(100):
        verdicts = session(rng, 30, slowed=3)
        caught += verdicts[3].status == "regression"
        others += sum(v.status == "regression" for k, v in enumerate(verdicts) if k != 3)
    assert caught >= 90
    assert others == 0


def test_a_benchmark_of_one_run_is_judged_at_its_holm_step() -> None:
    """Holm's step-down: a second clear regression makes the first's step less strict;
    the run's family line counts both, and each names its level."""
    rng = np.random.default_rng(5)
    verdicts = session(rng, 4, slowed=0, slowdown=0.3)
    assert verdicts[0].status == "regression"
    assert verdicts[0].family == 4
    assert verdicts[0].adjusted_p is not None
    assert verdicts[0].level == pytest.approx(DEFAULT_FAMILY_LEVEL / 4)
    line = format_verdict(verdicts[0])
    assert "[99.75% CI +" in line
    assert "Holm-adjusted p=" in line
    assert "10 pairs, between-pair SD" in line
    # A retained benchmark is judged at the level where the step-down stopped: its
    # interval holds 0, as its verdict says.
    for verdict in verdicts[1:]:
        assert verdict.status in ("unchanged", "inconclusive")
        assert verdict.interval is not None
        assert verdict.interval[0] <= 0.0 <= verdict.interval[1]


def test_the_line_prints_the_figures_the_verdict_came_from() -> None:
    """No medians beside the change (they can contradict it): the estimate, its interval,
    the pairs, their SD, p and the power, all of the same judgement."""
    base, cand = records(np.random.default_rng(3), 0.25)
    verdict = compare_interleaved(base, cand, GateSettings())
    assert verdict.status == "regression"
    assert verdict.interval is not None
    assert verdict.interval[0] > 0.0
    assert verdict.change == pytest.approx(0.25, abs=0.05)
    line = format_verdict(verdict)
    assert f"[99% CI {verdict.interval[0]:+.1%}, {verdict.interval[1]:+.1%}], 10 pairs" in line
    assert f"change {verdict.change:+.1%} " in line
    assert "median" not in line
    assert "confidence" not in line
    assert INTERLEAVED in line


def test_below_the_floor_a_certain_change_is_not_a_regression() -> None:
    """A real but small change (+2%, well measured) fails neither the family nor the run:
    the floor (relative_min_effect, 5%) is part of the rule."""
    base, cand = records(np.random.default_rng(4), 0.02, placement=0.002, noise=0.005)
    verdict = compare_interleaved(base, cand, GateSettings())
    assert verdict.interval is not None
    assert verdict.interval[0] > 0.0
    assert verdict.status == "unchanged"


# -- the run as one family ------------------------------------------------------------
def pairs_with_p(pvalue: float, mean: float = 0.08, pairs: int = 5) -> tuple[float, ...]:
    """Pair figures (log changes) around ``mean`` whose t test gives exactly ``pvalue``."""
    spread = np.array([-1.0, -0.5, 0.0, 0.5, 1.0][:pairs])
    spread = spread / spread.std(ddof=1)
    sd = mean * math.sqrt(pairs) / t_critical(pvalue, pairs - 1)
    return tuple(float(v) for v in mean + sd * spread)


def test_a_regression_only_holms_step_down_finds_fails_the_run_by_name(tmp_path: Path) -> None:
    """Two benchmarks in the family at 1%: p = 0.001 fails its test as it ends (at
    1% / 2), p = 0.008 passes there; Holm's second step (1% / 1) finds it at the end of
    the run, which then fails, naming it; the summary says how many were compared."""
    state = BenchSession(store=BaselineStore(tmp_path), save=False, compare=False, plot=None,
                         gate=GateSettings(), overrides=[], measure=MeasureDefaults(),
                         run_id="r", process="main", is_worker=False, against=tmp_path)
    base, _ = records(np.random.default_rng(0), 0.0)
    template = Verdict("t.py::test_a", "numpy", "AMD EPYC", "not-comparable",
                       relative_to=INTERLEAVED)
    first, second = (
        judge_pairs(dataclasses.replace(template, name=name, pair_figures=pairs_with_p(p)),
                    DEFAULT_FAMILY_LEVEL / 2, 2)
        for name, p in (("t.py::test_a", 0.001), ("t.py::test_b", 0.008)))
    assert first.pvalue == pytest.approx(0.001)
    assert first.status == "regression"
    assert second.status in ("unchanged", "inconclusive")
    state.results = [(base, first), (base, second)]
    state.judge_the_family()
    assert [v.status for _, v in state.results] == ["regression", "regression"]
    assert [v.name for v in state.family_regressions] == ["t.py::test_b"]
    lines = gate_terminal_lines(state.results, compared=True, family_level=0.01)
    assert "gpucheck benchmark gate: 2 regression" in lines
    assert ("gpucheck benchmark gate: 2 benchmark(s) compared as one family (Holm's method): "
            "a run of identical code fails with probability at most 0.01") in lines
    assert any("REGRESSION t.py::test_b" in line and "Holm-adjusted p=0.008" in line
               for line in lines)


@pytest.mark.parametrize(("args", "ini", "shown"), [
    (["--gpu-bench-family-level=1.5"], "", "--gpu-bench-family-level='1.5'"),
    (["--gpu-bench-family-level=x"], "", "--gpu-bench-family-level='x'"),
    ([], "gpu_bench_family_level = 0", "ini gpu_bench_family_level = '0'"),
])
def test_a_family_level_outside_0_1_is_one_line_and_exit_4(
        pytester: pytest.Pytester, args: list[str], ini: str, shown: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_x="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret == 4
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.errlines
    assert shown in errors[0]
    assert "must be a number in (0, 1)" in errors[0]


def test_the_rerun_command_keeps_the_stored_gate(pytester: pytest.Pytester) -> None:
    """A failed item's rerun line under --gpu-bench-compare keeps the compare and the
    baseline folder (without them the pasted command passes, the regression in place);
    the broken twin is the report without the hook, which printed ``pytest ID`` alone."""
    from pytest_gpucheck.reporting.report import get_matrix

    (pytester.path / "stored").mkdir()
    config = pytester.parseconfigure("--gpu-bench-compare", "--gpu-bench-baseline=stored")
    options = get_matrix(config).rerun_options
    assert options[-2:] == ("--gpu-bench-compare",
                            f"--gpu-bench-baseline={(pytester.path / 'stored').resolve()}")


def test_the_progress_line_shows_the_interval_so_far() -> None:
    base, cand = records(np.random.default_rng(9), 0.25)
    line = progress_line("t.py::test_k", 2, 30, 4, 10, base.samples, cand.samples, PER_PAIR,
                         DEFAULT_FAMILY_LEVEL / 30)
    assert line.startswith("gpucheck gate: benchmark 2 of 30 (t.py::test_k): 4 of 10 pairs "
                           "done, change so far +2")
    assert "[99.967% CI " in line
    first = progress_line("t.py::test_k", 1, 1, 1, 10, base.samples, cand.samples, PER_PAIR,
                          0.01)
    assert first == "gpucheck gate: benchmark 1 of 1 (t.py::test_k): 1 of 10 pairs done"


def test_page_faults_per_call_are_named_beside_the_median() -> None:
    """Memory a kernel maps afresh on each call is said where the median is.  Changed on
    purpose (issue 43): the gate no longer fixes glibc's mmap threshold, so the line no
    longer blames the gate for the faults (they are the kernel's, as users run it)."""
    base, _ = records(np.random.default_rng(1), 0.0)
    quiet = derived_figures(base)
    assert "page faults" not in quiet
    faulting = dataclasses.replace(base, extra={**base.extra, "page_faults_per_call": 65.0})
    assert "65 page faults per call" in derived_figures(faulting)
    assert "fresh mapping under --gpu-bench-against" not in derived_figures(faulting)


def test_an_interval_beyond_any_float_is_printed_not_raised() -> None:
    """Two pairs at a strict level: the critical t is about 6e6, the interval's end
    beyond any float.  A run once failed every benchmark with an OverflowError."""
    template = Verdict("t.py::test_k", "numpy", "AMD EPYC", "not-comparable",
                       relative_to=INTERLEAVED, pair_figures=(0.0, 0.05))
    verdict = judge_pairs(template, 1e-7, 3)
    assert verdict.interval is not None
    assert verdict.interval[1] == math.inf
    assert "above +1000%]" in format_verdict(verdict)
    base, cand = records(np.random.default_rng(2), 0.0, pairs=2, placement=0.3)
    line = progress_line("t.py::test_k", 1, 3, 2, 2, base.samples, cand.samples, PER_PAIR,
                         1e-7)
    assert "above +1000%]" in line


def test_a_stored_baseline_of_another_process_mode_is_named_in_the_verdict() -> None:
    """The stored gate compares one process with one; a baseline measured in the test
    process and compared in an isolation worker read +49% on identical code.  The
    verdict says so (each record now carries its process mode); the same mode says
    nothing."""
    from pytest_gpucheck.bench.gate import compare

    rng = np.random.default_rng(0)
    base = dataclasses.replace(records(rng, 0.0)[0], extra={"process_mode": "in-process"})
    worker = dataclasses.replace(records(rng, 0.0)[1],
                                 extra={"process_mode": "isolation worker"})
    # Compared only when asked (--gpu-bench-cross-mode; refused otherwise:
    # tests/bench/test_bench_stored_modes.py).
    verdict = compare(base, worker, GateSettings(), cross_mode=True)
    assert ("baseline measured in the test process, this run in an isolation worker: "
            "different heap histories alone moved identical code by +49%") in verdict.reason
    same = dataclasses.replace(worker, extra={"process_mode": "in-process"})
    assert "heap histories" not in compare(base, same, GateSettings()).reason


def test_every_compared_benchmark_prints_its_change_and_interval() -> None:
    """A run of identical benchmarks: the summary gives each unchanged one its change and
    interval on a line of its own (the figures a user reads to see how close it came),
    not only the count; a regression keeps its whole line."""
    rng = np.random.default_rng(4)
    results = []
    for k, slowdown in enumerate((0.0, 0.0, 1.0)):
        base, cand = records(rng, slowdown)
        verdict = compare_interleaved(base, cand, GateSettings(), level=0.01 / 3, family=3)
        results.append((cand, dataclasses.replace(verdict, name=f"t.py::test_{k}")))
    assert [v.status for _, v in results] == ["unchanged", "unchanged", "regression"]
    lines = gate_terminal_lines(results, compared=True, family_level=0.01)
    for k in (0, 1):
        verdict = results[k][1]
        assert verdict.interval is not None
        assert verdict.change is not None
        low, high = verdict.interval
        line = (f"  UNCHANGED t.py::test_{k} [numpy on AMD EPYC], change "
                f"{verdict.change:+.1%} [99.67% CI {low:+.1%}, {high:+.1%}], 10 pairs")
        assert line in lines, lines
    assert sum("REGRESSION t.py::test_2" in line for line in lines) == 1
    assert "gpucheck benchmark gate: 1 regression, 2 unchanged" in lines
