"""The stored-baseline gate (``--gpu-bench-compare``) as a user meets it: a baseline
measured in another process mode is refused with one line and exit 4 before any
benchmark runs, and a regression against a stored baseline is advisory unless
``--gpu-bench-compare-fails`` (the mode misses its targets: docs/benchmarks.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bench_projects import WITHOUT_HYPOTHESIS, with_two_processes
from test_bench_plugin import BENCH_TEST, INI, run

from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.gate import (
    PROCESS_MEASURED,
    GateSettings,
    Verdict,
    compare,
    format_verdict,
    judge_stored_family,
    stored_first_step,
)
from pytest_gpucheck.bench.records import BenchmarkRecord


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the suite's xdist, the in-process runs must not look like xdist workers."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


#: The benchmarks on the ``gpu_backend`` parameter: ``--gpu-isolate`` sends such items
#: to an isolation worker (an item without one times NumPy in the test process).
BACKEND_BENCH = BENCH_TEST.replace("(gpu_benchmark):", "(gpu_benchmark, gpu_backend):")


@pytest.fixture(scope="module")
def _recorded_once() -> dict[str, Path]:
    """The baseline folder the module's first ``recorded`` project saved (``"kept"``)."""
    return {}


@pytest.fixture
def recorded(pytester: pytest.Pytester, _recorded_once: dict[str, Path],
             tmp_path_factory: pytest.TempPathFactory) -> str:
    """A project with a baseline of its two benchmarks, recorded in the test process.

    Recorded once per module (a run in-process and its fresh processes) and copied into
    each later test's project, as a user records once and compares many times: no
    comparison writes to the baseline, and its files name no path of the project."""
    assert BACKEND_BENCH.count("gpu_backend)") == 2
    pytester.makeini(with_two_processes(INI) + WITHOUT_HYPOTHESIS + "gpu_backends = numpy\n")
    pytester.makepyfile(test_bench=BACKEND_BENCH)
    baselines = pytester.path / "baselines"
    folder = f"--gpu-bench-baseline={baselines}"
    if "kept" in _recorded_once:
        shutil.copytree(_recorded_once["kept"], baselines)
        return folder
    run(pytester, folder, "--gpu-bench-save", "--gpu-isolate=none").assert_outcomes(passed=2)
    kept = tmp_path_factory.mktemp("recorded") / "baselines"
    shutil.copytree(baselines, kept)
    _recorded_once["kept"] = kept
    return folder


@pytest.mark.slow
def test_a_baseline_from_another_process_mode_is_refused_before_any_benchmark(
    pytester: pytest.Pytester, recorded: str
) -> None:
    refused = run(pytester, recorded, "--gpu-bench-compare", "--gpu-isolate=backend")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in refused.stderr.lines if line.startswith("ERROR:")]
    assert line.startswith("ERROR: --gpu-bench-compare test_bench.py::test_kernel[numpy] "
                           "[numpy on ")
    assert ("the stored baseline was measured in the test process (in-process), this run "
            "measures in an isolation worker (isolation worker)") in line
    assert "--gpu-bench-save under the same --gpu-isolate" in line
    assert "add --gpu-bench-cross-mode" in line
    assert "passed" not in refused.stdout.str()  # refused before any test ran
    # The same mode (the twin) is compared.
    same = run(pytester, recorded, "--gpu-bench-compare", "--gpu-isolate=none")
    same.assert_outcomes(passed=2)
    same.stdout.fnmatch_lines(["gpucheck benchmark gate: *2 *"])


@pytest.mark.slow
def test_cross_mode_compares_across_modes_and_names_both(
    pytester: pytest.Pytester, recorded: str
) -> None:
    """Asked for, the comparison runs in the isolation worker and names both modes."""
    # In-process: the isolation worker that measures is a process of its own all the same.
    done = run(pytester, recorded, "--gpu-bench-compare", "--gpu-isolate=backend",
               "--gpu-bench-cross-mode", "--gpu-report=report.json")
    assert done.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), done.stderr.str()
    report = json.loads((pytester.path / "report.json").read_text())
    results = report_results(report)
    assert [r["record"]["extra"]["process_mode"] for r in results] == ["isolation worker"] * 2
    for result in results:
        assert result["verdict"]["status"] != "not-comparable", result["verdict"]
        assert "baseline measured in the test process, this run in an isolation worker" \
            in result["verdict"]["reason"]


def report_results(report: Any) -> list[dict[str, Any]]:
    """The benchmarks section's results in a ``--gpu-report`` JSON file."""
    found = [value for value in walk(report) if isinstance(value, dict) and "results" in value
             and "baseline_dir" in value]
    assert len(found) == 1, report
    return list(found[0]["results"])


def walk(value: Any) -> Any:
    yield value
    children = value.values() if isinstance(value, dict) else \
        value if isinstance(value, list) else ()
    for child in children:
        yield from walk(child)


def record(mode: str, scale: float) -> BenchmarkRecord:
    env = Environment("CPU", "", "", "", "numpy", "2.0", "3.12")
    samples = [scale * (1.0 + 0.001 * (k % 7)) for k in range(40)]
    return BenchmarkRecord("t.py::test_k", env, "process", samples, 1, 0, 0.0, False,
                           extra={"process_mode": mode})


def test_the_comparison_itself_refuses_another_mode_unless_asked() -> None:
    """What an item sent to MPI ranks meets (its mode is not known before collection)."""
    refused = compare(record("in-process", 1.0), record("MPI rank", 2.0), GateSettings())
    assert refused.status == "not-comparable"
    assert "measured in the test process (in-process), this run measures in an MPI rank" \
        in refused.reason
    asked = compare(record("in-process", 1.0), record("MPI rank", 2.0), GateSettings(),
                    cross_mode=True)
    assert asked.status == "regression"
    assert "baseline measured in the test process, this run in an MPI rank" in asked.reason
    same = compare(record("MPI rank", 1.0), record("MPI rank", 2.0), GateSettings())
    assert same.status == "regression"
    assert "advisory" not in format_verdict(same)


def unwrapped(result: pytest.RunResult) -> pytest.LineMatcher:
    """The output with the summary's long lines joined again (it wraps them at the
    terminal's width, continuing them indented)."""
    return pytest.LineMatcher(result.stdout.str().replace("\n    ", " ").splitlines())


@pytest.mark.slow
def test_a_stored_regression_is_advisory_unless_asked_to_fail(
    pytester: pytest.Pytester, recorded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted 5x slowdown: reported as an advisory REGRESSION with the mode's measured
    rates (at the process level since the baseline holds one summary per process), the
    run passes; with --gpu-bench-compare-fails the same run fails.  Its false-fail chance
    (a missed slowdown at 2 + 2 processes): bench_projects.with_two_processes."""
    # Each stored record counts its page faults per call (compared below).
    (saved,) = (pytester.path / "baselines").glob("*/numpy/*.json")
    assert all(r["extra"]["page_faults_per_call"] >= 0.0
               for r in json.loads(saved.read_text())["benchmarks"])
    monkeypatch.setenv("BENCH_SCALE", "5")
    advised = run(pytester, recorded, "--gpu-bench-compare")
    advised.assert_outcomes(passed=2)
    assert advised.ret == pytest.ExitCode.OK
    unwrapped(advised).fnmatch_lines([
        "*REGRESSION (advisory) test_bench.py::test_kernel[[]numpy] [[]numpy on *], "
        f"change +*%*advisory: the stored mode misses its targets ({PROCESS_MEASURED}), so "
        "this does not fail the run; --gpu-bench-compare-fails makes it fail*",
        "gpucheck benchmark gate: 1 regression, 1 unchanged",
        "gpucheck benchmark gate: 1 regression(s) against the stored baseline are advisory*",
    ])
    failed = run(pytester, recorded, "--gpu-bench-compare", "--gpu-bench-compare-fails")
    failed.assert_outcomes(passed=1, failed=1)
    unwrapped(failed).fnmatch_lines([
        "*REGRESSION test_bench.py::test_kernel[[]numpy] [[]numpy on *Holm-adjusted p=* over 2 "
        "benchmarks*",
        "gpucheck benchmark gate: 2 stored comparison(s) judged as one family (Holm's method "
        "at 0.01)*"])
    assert "(advisory)" not in failed.stdout.str()
    # The ini key does the same, for a project that wants the stored gate to fail CI.
    pytester.makeini(with_two_processes(INI) + WITHOUT_HYPOTHESIS +
                     "gpu_backends = numpy\ngpu_bench_stored_fails = true\n")
    run(pytester, recorded, "--gpu-bench-compare").assert_outcomes(passed=1, failed=1)


def test_the_rerun_command_keeps_the_stored_options(pytester: pytest.Pytester) -> None:
    """Pasted, a failed item's rerun line fails again: without --gpu-bench-compare-fails
    the regression would be advisory, without --gpu-bench-cross-mode refused."""
    from pytest_gpucheck.reporting.report import get_matrix

    (pytester.path / "stored").mkdir()
    config = pytester.parseconfigure("--gpu-bench-compare", "--gpu-bench-baseline=stored",
                                     "--gpu-bench-compare-fails", "--gpu-bench-cross-mode")
    assert get_matrix(config).rerun_options[-4:] == (
        "--gpu-bench-compare", f"--gpu-bench-baseline={(pytester.path / 'stored').resolve()}",
        "--gpu-bench-compare-fails", "--gpu-bench-cross-mode")


def stored_verdict(name: str, pvalue: float, change: float) -> Verdict:
    """A stored comparison's regression at ``pvalue`` with this change of the median."""
    return Verdict(name, "numpy", "CPU", "regression", baseline_median=1.0,
                   new_median=1.0 + change, pvalue=pvalue, settings=GateSettings())


def test_failing_stored_comparisons_are_one_family() -> None:
    """30 benchmarks each at p=0.0009 (below alpha=0.001) and +30%: judged one by one
    (the broken twin: every one fails) 30 regressions; as a family at 0.01 none (Holm
    adjusts them to 0.026), while one at p=1e-5 among them is still a regression."""
    verdicts = [stored_verdict(f"t.py::test_{k}", 0.0009, 0.30) for k in range(29)]
    verdicts.append(stored_verdict("t.py::test_real", 1e-5, 0.30))
    assert sum(v.status == "regression" for v in verdicts) == 30  # one by one
    first = [stored_first_step(v, 0.01 / 30, 30) for v in verdicts]
    assert [v.status for v in first] == ["inconclusive"] * 29 + ["regression"]
    assert "not at the family's level (0.00033 over 30 benchmarks" in first[0].reason
    final = judge_stored_family(first, 0.01)
    assert [v.status for v in final] == ["inconclusive"] * 29 + ["regression"]
    assert final[0].adjusted_p == pytest.approx(29 * 0.0009)
    assert "Holm-adjusted p=0.0003 over 30 benchmarks" in format_verdict(final[-1])
    # Held back at the first step: the step-down confirms the one below alpha.
    pair = [stored_verdict("t.py::test_a", 0.004, 0.30), stored_verdict("t.py::test_b",
                                                                         0.0004, 0.30)]
    held = [stored_first_step(v, 0.0002, 2) for v in pair]
    assert [v.status for v in held] == ["inconclusive", "inconclusive"]
    settled = judge_stored_family(held, 0.01)
    assert [v.status for v in settled] == ["inconclusive", "regression"]
    assert settled[1].reason == ""


def test_page_faults_that_differ_are_named_in_the_stored_verdict() -> None:
    """0 against 65 faults per call (an in-process heap against fresh mappings, as
    measured for a 2^16 saxpy) is named; 60 against 65, or no count, is not."""
    def with_faults(mode: str, scale: float, faults: float | None) -> BenchmarkRecord:
        made = record(mode, scale)
        if faults is not None:
            made.extra["page_faults_per_call"] = faults
        return made

    named = compare(with_faults("in-process", 1.0, 0.0), with_faults("in-process", 2.0, 65.0),
                    GateSettings())
    assert named.status == "regression"
    assert "page faults per call: baseline 0, this run 65" in format_verdict(named)
    for old, new in ((60.0, 65.0), (None, 65.0), (0.0, 0.4)):
        quiet = compare(with_faults("in-process", 1.0, old), with_faults("in-process", 2.0, new),
                        GateSettings())
        assert "page faults" not in format_verdict(quiet), (old, new)
