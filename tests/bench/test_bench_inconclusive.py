"""An INCONCLUSIVE benchmark is visible where it matters (issue 43).

At realistic noise most of a run's benchmarks can end undecided, and they passed in
silence.  The summary now says how many the run could not decide; with
``--gpu-bench-inconclusive=fail`` (ini ``gpu_bench_inconclusive = fail``) a required
check fails on them; a bad value is one line and exit 4.  Each scenario is a
temporary user project run as the docs print it, in a subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_projects import SAXPY_BENCH as BENCH
from bench_projects import SMALL_GATE_INI as INI
from user_runs import run_pytest


def checkouts(root: Path, ini: str = INI) -> Path:
    for side in ("base", "candidate"):
        (root / side).mkdir()
        (root / side / "pytest.ini").write_text(ini)
        (root / side / "test_bench.py").write_text(BENCH)
    return root / "candidate"


@pytest.mark.parametrize(("args", "ini_line", "shown"), [
    (("--gpu-bench-inconclusive=maybe",), "", "--gpu-bench-inconclusive='maybe'"),
    ((), "gpu_bench_inconclusive = maybe\n", "ini gpu_bench_inconclusive = 'maybe'"),
])
def test_a_bad_value_is_one_line_and_exit_4(tmp_path: Path, args: tuple[str, ...],
                                            ini_line: str, shown: str) -> None:
    candidate = checkouts(tmp_path, INI + ini_line)
    run = run_pytest(candidate, "--gpu-bench-against=../base", *args, timeout=300)
    assert run.returncode == 4, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {shown}: use pass or fail (whether a benchmark the gate could "
                      "not decide fails the run; pass by default)"], run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pass", "fail"])
def test_an_undecided_benchmark_is_counted_and_fails_a_required_check(
        tmp_path: Path, mode: str) -> None:
    """Identical code timed by two pairs at the family level 1e-5: the interval (one
    degree of freedom at that level) is far too wide to decide, so the benchmark is
    INCONCLUSIVE; it is a REGRESSION or an IMPROVEMENT with probability at most 1e-5
    by the gate's design (this test's false-fail chance; nothing is retried)."""
    candidate = checkouts(tmp_path)
    args = ["--gpu-bench-against=../base", "--gpu-bench-family-level=1e-5", "-rA"]
    if mode == "fail":
        args.append("--gpu-bench-inconclusive=fail")
    run = run_pytest(candidate, *args, timeout=900)
    out = " ".join(run.stdout.split())  # the summary wraps long lines at the terminal
    assert "gpucheck benchmark gate: 1 inconclusive" in out, run.stdout
    line = ("gpucheck benchmark gate: 1 of 1 compared benchmark(s) could not be decided "
            "(INCONCLUSIVE: test_bench.py::test_saxpy [numpy]); this run does not show that "
            "they did not slow down")
    if mode == "pass":
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"{line}; --gpu-bench-inconclusive=fail makes a required check fail on it" \
            in out, run.stdout
    else:
        assert run.returncode == 1, run.stdout + run.stderr
        assert f"{line}; the run fails (--gpu-bench-inconclusive=fail)" in out, run.stdout
