"""The stored gate at the level of processes (``--gpu-bench-save`` / ``--gpu-bench-compare``).

Each benchmark is timed in ``gpu_bench_processes`` fresh processes; one summary per
process is stored and compared (bench/stored.py).  The simulations use fixed seeds, so
they hold the rule to its numbers and cannot fail by chance; the user's runs plant a 5x
slowdown against a 25% floor on a kernel that spins for a set CPU time (its false-fail
chance: bench_projects.with_two_processes).
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import numpy as np
import pytest
from bench_projects import WITHOUT_HYPOTHESIS, with_two_processes
from test_bench_plugin import BENCH_TEST, INI, run

from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.gate import PROCESS_MEASURED, GateSettings, compare, format_verdict
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.stats import t_power, two_sample_test
from pytest_gpucheck.bench.stored import (
    SUMMARIES,
    compare_processes,
    judge_stored_processes,
    process_summary,
)

ENV = Environment("CPU", "", "", "", "numpy", "2.0", "3.12")
#: Variance components (log units): where a process's arrays landed moves every round it
#: times (placement), and each round has noise of its own.
PLACEMENT = 0.03
ROUND_NOISE = 0.02
PROCESSES = 5
PER_PROCESS = 12


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the suite's xdist, the in-process runs must not look like xdist workers."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def measured(rng: np.random.Generator, slowdown: float, settings: GateSettings,
             processes: int = PROCESSES) -> BenchmarkRecord:
    """A record as ``--gpu-bench-save`` makes it: ``processes`` fresh processes, each with
    its placement offset, timing ``PER_PROCESS`` rounds."""
    samples: list[float] = []
    summaries = []
    for _ in range(processes):
        offset = rng.normal(0.0, PLACEMENT)
        rounds = list(1e-3 * (1.0 + slowdown) * np.exp(
            offset + rng.normal(0.0, ROUND_NOISE, PER_PROCESS)))
        samples += rounds
        summaries.append(process_summary(rounds, settings))
    return BenchmarkRecord("t.py::test_k", ENV, "process", samples, 1, 0, 0.0, False,
                           extra={SUMMARIES: summaries, "process_mode": "in-process"})


def test_the_process_level_rule_holds_its_level_where_the_round_level_one_does_not() -> None:
    """A/A with a placement per process: regressions judged process against process at a
    two-sided level of 10% (floor 0, so the test alone decides) come out at about half of
    it (one side): 1000 comparisons, 4.8%.  The broken twin, the first 300 of the same
    data compared round against round (Mann-Whitney on every round, as the old stored
    mode did, at alpha 10%), raises 83 of 300 (27.7%): it counts 60 dependent rounds as 60
    independent ones."""
    settings = GateSettings(min_effect=0.0, alpha=0.10, keep_fraction=1.0)
    rng = np.random.default_rng(2028)
    process_level = round_level = 0
    trials = 1000
    for trial in range(trials):
        old, new = measured(rng, 0.0, settings), measured(rng, 0.0, settings)
        process_level += compare_processes(old, new, settings, 0.10, 1).status == "regression"
        if trial < 300:
            new.extra.pop(SUMMARIES)  # the same rounds, without the processes' summaries
            round_level += compare(old, new, settings).status == "regression"
    assert (process_level, round_level) == (48, 83)
    assert 0.03 < process_level / trials < 0.07  # the nominal 5%, within its noise


def test_the_power_figure_is_what_the_rule_catches() -> None:
    """10% slowdowns at the defaults (min effect 7%, 5 + 5 processes, one benchmark at
    1%): the share caught matches the verdict's own power figure (non-central t) within
    the simulation's noise, 600 comparisons."""
    settings = GateSettings()
    rng = np.random.default_rng(7)
    caught, powers = 0, []
    trials = 600
    for _ in range(trials):
        verdict = compare_processes(measured(rng, 0.0, settings),
                                    measured(rng, 0.10, settings), settings, 0.01, 1)
        caught += verdict.status == "regression"
    # The power at the model's true between-process SD of the summaries.
    sd = math.sqrt(PLACEMENT ** 2 + (math.pi / 2) * ROUND_NOISE ** 2 / (PER_PROCESS / 2))
    powers.append(t_power(sd * math.sqrt(2 / PROCESSES), 2 * PROCESSES - 2, math.log1p(0.10),
                          0.01, math.log1p(settings.min_effect)))
    assert abs(caught / trials - powers[0]) < 0.05, (caught, powers)


def test_the_two_sample_test_agrees_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    old, new = rng.normal(0.0, 0.03, 5), rng.normal(0.04, 0.03, 5)
    ours = two_sample_test(old, new, 0.01)
    theirs = scipy_stats.ttest_ind(new, old, equal_var=True)
    assert ours.pvalue == pytest.approx(theirs.pvalue, rel=1e-6)
    low, high = theirs.confidence_interval(0.99)
    assert (ours.low, ours.high) == (pytest.approx(low), pytest.approx(high))


def test_one_family_per_run_and_the_verdict_line() -> None:
    """30 identical benchmarks and one 2x slower: judged one by one at 1% (the broken
    twin) one identical one is red; as one family (Holm at 1%) only the slow one, and
    its line gives the change, its interval, the processes and the adjusted p-value."""
    settings = GateSettings()
    rng = np.random.default_rng(11)
    pairs = [(measured(rng, 0.0, settings), measured(rng, 0.0, settings)) for _ in range(30)]
    pairs.append((measured(rng, 0.0, settings), measured(rng, 1.0, settings)))
    alone = [compare_processes(old, new, GateSettings(min_effect=0.0), 0.01, 1)
             for old, new in pairs]
    assert sum(v.status == "regression" for v in alone[:30]) == 1
    first = [compare_processes(old, new, settings, 0.01 / 31, 31) for old, new in pairs]
    final = judge_stored_processes(first, 0.01, fails=False)
    assert [v.status for v in final].count("regression") == 1
    assert final[-1].status == "regression"
    assert final[-1].advisory
    line = format_verdict(final[-1])
    assert line.startswith("REGRESSION (advisory) t.py::test_k [numpy on CPU], change +")
    assert "5 + 5 processes, between-process SD " in line
    assert "Holm-adjusted p=" in line
    assert "over 31 benchmarks" in line
    assert PROCESS_MEASURED in line
    failing = judge_stored_processes(first, 0.01, fails=True)
    assert not failing[-1].advisory
    assert "(advisory)" not in format_verdict(failing[-1])


def saved_project(pytester: pytest.Pytester) -> str:
    """A user's project with a baseline of its two benchmarks, each timed in 2 processes
    (its ini's ``gpu_bench_processes``)."""
    pytester.makeini(with_two_processes(INI) + WITHOUT_HYPOTHESIS + "gpu_backends = numpy\n")
    pytester.makepyfile(test_bench=BENCH_TEST)
    folder = f"--gpu-bench-baseline={pytester.path / 'baselines'}"
    run(pytester, folder, "--gpu-bench-save").assert_outcomes(passed=2)
    return folder


@pytest.mark.slow
def test_a_saved_baseline_then_a_2x_slower_variant(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's path: save, then compare a 5x slower kernel (missed at 2 + 2 processes
    with the chance bench_projects.with_two_processes gives, in each of the three
    compares).  The baseline holds one summary per fresh process; the comparison is
    advisory by default (the mode's measured rates in the line) and fails with
    --gpu-bench-compare-fails, whose rerun line, pasted, compares again and fails
    again."""
    folder = saved_project(pytester)
    (saved,) = (pytester.path / "baselines").glob("*/numpy/*.json")
    data = json.loads(saved.read_text())
    assert data["schema"] == "pytest-gpucheck-benchmarks/2"
    for record in data["benchmarks"]:
        assert len(record["extra"][SUMMARIES]) == 2
        assert record["extra"]["processes"] == 2
    monkeypatch.setenv("BENCH_SCALE", "5")
    advised = run(pytester, folder, "--gpu-bench-compare")
    advised.assert_outcomes(passed=2)
    text = advised.stdout.str().replace("\n    ", " ")
    assert "REGRESSION (advisory) test_bench.py::test_kernel" in text
    assert "2 + 2 processes, between-process SD" in text
    assert PROCESS_MEASURED in text
    failed = run(pytester, folder, "--gpu-bench-compare", "--gpu-bench-compare-fails", "-rA")
    failed.assert_outcomes(passed=1, failed=1)
    reruns = [line.split("rerun: ", 1)[1] for line in failed.stdout.lines
              if "rerun: pytest " in line]
    assert len(reruns) == 1, failed.stdout.str()
    command = shlex.split(reruns[0])
    assert "--gpu-bench-compare" in command
    assert "gpu_bench_processes=2" in command
    again = run(pytester, *command[1:])
    again.assert_outcomes(failed=1)
    assert "REGRESSION test_bench.py::test_kernel" in again.stdout.str().replace("\n    ", " ")


def test_fewer_than_two_processes_is_bad_input(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_bench=BENCH_TEST)
    result = run(pytester, f"--gpu-bench-baseline={pytester.path / 'b'}", "--gpu-bench-save",
                 "-o", "gpu_bench_processes=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == ["ERROR: ini gpu_bench_processes = 1; the stored gate compares one "
                      "summary per process and needs at least 2 processes a side to see how "
                      "far they spread; set it to 2 or more (5 by default)"]


def test_an_old_format_baseline_names_the_fix(pytester: pytest.Pytester) -> None:
    """A baseline saved before the process level (schema 1, one process): one line and
    exit 4, naming the re-save; the twin, a schema-2 file, is read."""
    pytester.makeini(INI)
    pytester.makepyfile(test_bench=BENCH_TEST)
    folder = pytester.path / "b" / "cpu" / "numpy"
    folder.mkdir(parents=True)
    old = folder / "old.json"
    old.write_text(json.dumps({"schema": "pytest-gpucheck-benchmarks/1", "benchmarks": []}))
    result = run(pytester, f"--gpu-bench-baseline={pytester.path / 'b'}", "--gpu-bench-compare")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1
    assert errors[0] == (f"ERROR: baseline file {old} was saved by an older pytest-gpucheck "
                         "(schema 'pytest-gpucheck-benchmarks/1': one process per benchmark, "
                         "which the stored gate no longer compares); delete it and re-save "
                         "the baseline with --gpu-bench-save")
    from pytest_gpucheck.bench.baseline import SCHEMA, read_run

    old.write_text(json.dumps({"schema": SCHEMA, "benchmarks": [], "device_model": "cpu",
                               "backend": "numpy", "saved_at": "x"}))
    assert read_run(Path(old)).records == {}
