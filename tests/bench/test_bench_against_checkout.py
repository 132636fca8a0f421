"""``--gpu-bench-against=DIR`` refuses a folder that is not a checkout of the project.

A CI path mistake (the baseline checked out somewhere else, a folder of other code)
used to end green after 72 s: every benchmark NO-BASELINE, and a footer about
"stored comparison(s)".  A gate that compares with nothing must not pass: the run
stops with one line and exit 4 before any timing.  Each scenario is a temporary user
project run as the docs print it, ``python -m pytest --gpu-bench-against=../base``,
in a subprocess.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from bench_projects import SAXPY_BENCH as BENCH
from bench_projects import SMALL_GATE_INI as INI
from user_runs import run_pytest


def project(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "pytest.ini").write_text(INI)
    for path, text in files.items():
        (folder / path).write_text(text)
    return folder


def test_a_folder_without_the_benchmark_files_is_a_usage_error(tmp_path: Path) -> None:
    candidate = project(tmp_path, "candidate", {"test_bench.py": BENCH})
    other = tmp_path / "base"
    other.mkdir()
    (other / "README.md").write_text("some other project\n")
    run = run_pytest(candidate, "--gpu-bench-against=../base", timeout=300)
    assert run.returncode == 4, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [
        f"ERROR: --gpu-bench-against=../base: none of this run's 1 benchmark file(s) is there "
        f"(looked for test_bench.py) in {other.resolve()}, so it is not a checkout of this "
        "project and the gate would compare with nothing; give a checkout of the baseline "
        "code (git worktree add ../base origin/main)"], run.stderr
    # Before any timing: no benchmark ran, no verdict was printed.
    assert "NO-BASELINE" not in run.stdout
    assert "passed" not in run.stdout


@pytest.mark.slow
def test_a_checkout_without_the_benchmarks_is_a_usage_error(tmp_path: Path) -> None:
    """The file is there, but none of the run's benchmarks is a test in it (another
    project's test_bench.py): known once the first baseline process collected, before
    any round is timed."""
    candidate = project(tmp_path, "candidate", {"test_bench.py": BENCH})
    project(tmp_path, "base", {"test_bench.py": BENCH.replace("test_saxpy", "test_other")})
    run = run_pytest(candidate, "--gpu-bench-against=../base", timeout=600)
    assert run.returncode == 4, run.stdout + run.stderr
    line = (f"--gpu-bench-against=../base: none of this run's 1 benchmark(s) is a test there "
            f"(looked for test_bench.py::test_saxpy) in {(tmp_path / 'base').resolve()}, so it "
            "is not a checkout of this project")
    # The terminal wraps long lines at its width.
    assert line in " ".join((run.stdout + run.stderr).split()), run.stdout + run.stderr
    assert "NO-BASELINE" not in run.stdout
    assert "change so far" not in run.stdout


@pytest.mark.slow
def test_a_partial_match_names_what_is_missing(tmp_path: Path) -> None:
    """One benchmark in both checkouts, one only in the candidate (a new benchmark): the
    run goes on, the new one is NO-BASELINE and the summary names it.  The shared one is
    timed by two pairs at the family level 1e-5 (its false-fail chance per run by
    design); only the lines are asserted, not its verdict."""
    candidate = project(tmp_path, "candidate", {"test_bench.py": BENCH,
                                                "test_new.py": BENCH})
    project(tmp_path, "base", {"test_bench.py": BENCH})
    run = run_pytest(candidate, "--gpu-bench-against=../base", "-rA",
                     "--gpu-bench-family-level=1e-5", timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "NO-BASELINE test_new.py::test_saxpy" in run.stdout
    assert (f"gpucheck benchmark gate: 1 benchmark(s) of this run are not tests in the "
            f"baseline checkout {(tmp_path / 'base').resolve()}, so nothing judged them (new "
            "benchmarks, or a checkout of other code): test_new.py::test_saxpy") \
        in " ".join(run.stdout.split())  # the summary wraps long lines at the terminal's width


def test_a_run_that_compared_nothing_says_so_not_stored_comparisons() -> None:
    """The footer of a ``--gpu-bench-against`` run whose benchmarks all had no baseline
    spoke of "stored comparison(s)"; it says that nothing was compared."""
    import dataclasses

    import numpy as np
    from test_bench_pairs import records

    from pytest_gpucheck.bench.gate import INTERLEAVED, GateSettings, Verdict
    from pytest_gpucheck.bench.summary import gate_terminal_lines

    _, cand = records(np.random.default_rng(0), 0.0)
    verdict = Verdict(cand.name, cand.backend, cand.environment.device_model, "no-baseline",
                      settings=GateSettings(), relative_to=INTERLEAVED,
                      reason="t.py::test_a is not a test in the baseline checkout /b")
    lines = gate_terminal_lines([(cand, dataclasses.replace(verdict, family=None))],
                                compared=True, family_level=0.01, interleaved=True)
    assert "gpucheck benchmark gate: no benchmark was compared with the baseline checkout" \
        in lines, lines
    assert not any("stored comparison" in line for line in lines), lines


#: A benchmark whose test first checks the allocator regime of the process it runs in:
#: a freed 2 MiB array's memory is reused from the heap for the next one, as in a user's
#: process under glibc (its mmap threshold rises after the first large free).
ALLOCATOR_BENCH = textwrap.dedent("""\
    import ctypes
    import platform

    import numpy as np


    def test_saxpy(gpu_benchmark):
        if platform.libc_ver()[0] == "glibc":
            libc = ctypes.CDLL(None)
            libc.sbrk.restype, libc.sbrk.argtypes = ctypes.c_void_p, (ctypes.c_ssize_t,)
            first = np.empty(1 << 18, np.float64)
            del first
            again = np.empty(1 << 18, np.float64)
            assert again.ctypes.data < libc.sbrk(0), "a fixed mmap threshold"
        x = np.ones(1 << 12, np.float32)
        gpu_benchmark(lambda: 2.5 * x + x)
    """)


@pytest.mark.slow
def test_the_measured_processes_keep_the_allocator_users_run(tmp_path: Path) -> None:
    """Issue 43: the gate's processes fixed glibc's mmap threshold, so every large host
    array was fresh pages faulting in on every call (a program no user runs; a change
    that allocates read 2-5x its size).  The test body asserts the user's regime in every
    process that runs it: on the old code the baseline's process failed it before its
    benchmark (NO-BASELINE) and the candidate's too.  Identical code at 2 pairs and
    family level 1e-5: only the lines are asserted, not the verdict (its false-fail
    chance is 1e-5 by design)."""
    candidate = project(tmp_path, "candidate", {"test_bench.py": ALLOCATOR_BENCH})
    project(tmp_path, "base", {"test_bench.py": ALLOCATOR_BENCH})
    run = run_pytest(candidate, "--gpu-bench-against=../base", "-rA",
                     "--gpu-bench-family-level=1e-5", timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "NO-BASELINE" not in run.stdout, run.stdout
    assert "a fixed mmap threshold" not in run.stdout + run.stderr
    assert "gpucheck benchmark gate: 1 " in run.stdout


def test_gate_settings_given_with_o_reach_both_sides(pytester: pytest.Pytester) -> None:
    """A gate setting on the command line (``-o gpu_bench_cpu_clock=process``) is passed
    to the baseline's processes as to the candidate's: each peer reads its own
    checkout's ini, so before, only the candidate's processes timed process CPU time,
    the baseline's wall time, and every verdict was NOT-COMPARABLE.  Other ``-o``
    settings are the user's business in each checkout and are not passed."""
    from pytest_gpucheck.bench.peers import _passed_options

    config = pytester.parseconfig("-o", "gpu_bench_cpu_clock=process", "-o",
                                  "gpu_bench_rounds=12", "-o", "console_output_style=classic")
    args = _passed_options(config)
    overrides = [args[i + 1] for i, arg in enumerate(args) if arg == "-o"]
    assert overrides == ["gpu_bench_cpu_clock=process", "gpu_bench_rounds=12"], args
    assert "console_output_style=classic" not in args
