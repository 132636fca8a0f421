"""A rank that aborts, exits or hangs never turns into a green MPI run.

Launched mode: ``mpiexec -n 2 python -m pytest``, exactly as a user types it.
Spawned mode: plain ``python -m pytest``, the plugin starts the job.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mpi_runs import run_user_pytest
from user_runs import LEAN_ENV, LEAN_PLUGINS, run_pytest

from pytest_gpucheck.mpi.launcher import find_executable

MPIEXEC = find_executable("mpiexec")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'"
)]
RUN_LIMIT = 150

TESTS = """
import os
import time

import pytest


@pytest.mark.mpi(ranks=2)
def test_1_fails_first(mpi_comm):
    assert 0, "an earlier failure"


@pytest.mark.mpi(ranks=2, timeout=5)
def test_2_stops_the_job(mpi_comm, mpi_rank):
    case = os.environ["CASE"]
    if mpi_rank != int(os.environ.get("VICTIM", "0")) and case not in ("abort", "hang"):
        case = ""
    if case == "abort":
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort()  # error code 0
    if case == "Abort()":
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort()
    if case == "Abort(0)":
        mpi_comm.Abort(0)
    if case == "Split().Abort(0)":
        from mpi4py import MPI

        MPI.COMM_SELF.Split(0, 0).Abort(0)
    if case == "conftest":
        from conftest import WORLD

        WORLD.Abort()
    if case in ("exit", "os._exit(0)"):
        os._exit(0)
    if case == "os._exit(3)":
        os._exit(3)
    if case == "segfault":
        import ctypes

        ctypes.string_at(0)
    if case == "hang" and mpi_rank == 1:
        time.sleep(120)
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=2)
def test_3_after(mpi_comm):
    mpi_comm.Barrier()
"""


#: The line of TESTS that reads the case from the environment (a file per case fixes it).
CASE_LINE = 'case = os.environ["CASE"]'


def run(project: Path, case: str, *command: str, victim: int = 0
        ) -> subprocess.CompletedProcess[str]:
    (project / "test_job.py").write_text(TESTS)
    return run_pytest(project, *LEAN_PLUGINS, "-v", "--gpu-mpi-max-ranks=2", launcher=command,
                      timeout=RUN_LIMIT,
                      extra_env={**LEAN_ENV, "CASE": case, "VICTIM": str(victim)})


def test_launched_watchdog_stop_prints_the_results_before_it(tmp_path: Path) -> None:
    assert MPIEXEC is not None
    result = run(tmp_path, "hang", MPIEXEC, "-n", "2")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "did not finish within its timeout of 5 s" in output
    # rank 1 sleeps in the test; rank 0 waits for it in mpi_comm.Barrier()
    assert "hung (still running the test): rank(s) 1\n" in output, output
    assert ("blocked in an MPI call of the test, most likely waiting for them: "
            "rank(s) 0 (Barrier)") in output, output
    assert "gpucheck mpi: results before the job was stopped" in output
    assert "AssertionError: an earlier failure" in output
    assert "before the stop: 1 failed; the stopped test failed" in output


STOPPED = "test_job.py::test_2_stops_the_job"
LAST_WORDS = {
    "Abort()": f"called MPI_Abort(0) during {STOPPED}; the job ends here (with exit code 1, "
               "not 0)",
    "Abort(0)": f"called MPI_Abort(0) during {STOPPED}; the job ends here (with exit code 1, "
                "not 0)",
    "Split().Abort(0)": f"called MPI_Abort(0) during {STOPPED}; the job ends here (with exit "
                        "code 1, not 0)",
    "os._exit(0)": f"called os._exit(0) during {STOPPED}; the job ends here (with exit code 1, "
                   "not 0)",
    "os._exit(3)": f"called os._exit(3) during {STOPPED}; the job ends here",
}


@pytest.mark.parametrize("victim", [0, 1])
@pytest.mark.parametrize("case", [*LAST_WORDS, "segfault"])
def test_launched_abort_exit_or_crash_on_a_rank_is_named_and_never_green(
        tmp_path: Path, case: str, victim: int) -> None:
    """``mpiexec -n 2 pytest``: the rank that ends the job says so, and the job fails."""
    assert MPIEXEC is not None
    result = run(tmp_path, case, MPIEXEC, "-n", "2", victim=victim)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"{STOPPED} PASSED" not in output  # MPICH's MPI_Abort returns for a moment
    if case == "segfault":
        assert (f"gpucheck mpi: rank {victim} (pid ") in output, output
        assert (f"crashed during {STOPPED}: Segmentation fault; faulthandler's stack of "
                f"rank {victim} (every thread):") in output, output
        assert f'[rank {victim}]   File "{tmp_path / "test_job.py"}", line ' in output, output
        rank_pid = output.split(f"gpucheck mpi: rank {victim} (pid ", 1)[1].split(",", 1)[0]
        assert _crash_reporters_gone(rank_pid), f"the crash reporter of pid {rank_pid} lives on"
    else:
        assert f"gpucheck mpi: rank {victim} {LAST_WORDS[case]}" in output, output
    if victim == 0:  # rank 0 holds the results so far and prints them before it goes
        assert "gpucheck mpi: results before the job was stopped" in output, output
        assert "AssertionError: an earlier failure" in output, output


#: In the order pytest collects their files (``test_job_abort.py``, ``test_job_exit.py``).
SPAWNED_CASES = ("abort", "exit")


@pytest.fixture(scope="module")
def spawned(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One spawned session (plain ``python -m pytest -v``) of a file per case of
    :data:`SPAWNED_CASES`, ``test_job_CASE.py``, in that order: each case's stop ends
    its job, and the tests after it run in the next."""
    project = tmp_path_factory.mktemp("spawned")
    for case in SPAWNED_CASES:
        assert TESTS.count(CASE_LINE) == 1
        (project / f"test_job_{case}.py").write_text(
            TESTS.replace(CASE_LINE, f"case = {case!r}"), encoding="utf-8")
    return run_user_pytest(project, *LEAN_PLUGINS, "-v", "--gpu-mpi-max-ranks=2",
                           timeout=RUN_LIMIT, extra_env=LEAN_ENV)


@pytest.mark.parametrize("case", SPAWNED_CASES)
def test_spawned_abort_or_exit_0_fails_its_test_and_the_rest_run(
        spawned: subprocess.CompletedProcess[str], case: str) -> None:
    output = spawned.stdout + spawned.stderr
    assert spawned.returncode == 1, output
    assert f"test_job_{case}.py::test_1_fails_first FAILED" in output
    assert f"test_job_{case}.py::test_2_stops_the_job FAILED" in output
    assert f"test_job_{case}.py::test_3_after PASSED" in output  # in a fresh job
    # Both files' test_2 fail under the same title, in the order they ran.
    stopped = _sections(spawned.stdout, "test_2_stops_the_job")
    assert len(stopped) == len(SPAWNED_CASES), output
    assert ("while running this test; it never reported a result"
            in stopped[SPAWNED_CASES.index(case)]), output


def _sections(out: str, test: str) -> list[str]:
    """Every section titled ``test`` in pytest's output, in order."""
    sections = []
    for head in re.finditer(rf"^_+ {re.escape(test)} _+$", out, re.MULTILINE):
        stop = out.find("\n___", head.end())
        sections.append(out[head.start() : stop if stop > 0 else None])
    return sections


def test_launched_abort_through_a_conftest_reference_is_named(tmp_path: Path) -> None:
    """A ``conftest.py`` that keeps ``MPI.COMM_WORLD`` at import gets the guarded one."""
    assert MPIEXEC is not None
    (tmp_path / "conftest.py").write_text("from mpi4py import MPI\n\nWORLD = MPI.COMM_WORLD\n")
    result = run(tmp_path, "conftest", MPIEXEC, "-n", "2", victim=1)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f"gpucheck mpi: rank 1 {LAST_WORDS['Abort()']}" in output, output


def _crash_reporters_gone(rank_pid: str, wait: float = 5.0) -> bool:
    """No crash reporter of the rank ``rank_pid`` is left (its argv: ... RANK PID HOST ...)."""
    import time

    if not Path("/proc").is_dir():
        return True
    give_up = time.monotonic() + wait
    while True:
        alive = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"-I" in argv and b"-S" in argv and rank_pid.encode() in argv:
                alive.append(cmdline)
        if not alive:
            return True
        if time.monotonic() > give_up:
            return False
        time.sleep(0.1)


PROGRESS = """
import pytest


def test_a():
    pass


def test_b():
    pass


@pytest.mark.mpi(ranks=2)
def test_spawned(mpi_comm):
    mpi_comm.Barrier()


def test_c():
    pass
"""


@pytest.mark.parametrize("verbosity", [[], ["-q"]], ids=["default", "quiet"])
def test_spawned_progress_lines_are_lines_of_their_own(tmp_path: Path,
                                                       verbosity: list[str]) -> None:
    """The job lines never land in the middle of pytest's ``..`` progress line (the
    "waiting for" lines are written the same way, by ``SpawnRouter._say``); under
    ``-q`` (the README's main job) too, where the letters carry no file name."""
    (tmp_path / "test_progress.py").write_text(PROGRESS)
    result = run_pytest(tmp_path, *LEAN_PLUGINS, "--gpu-mpi-max-ranks=2", *verbosity,
                        timeout=RUN_LIMIT, extra_env=LEAN_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    ours = [line for line in lines if "gpucheck mpi:" in line]
    assert any("finished in" in line for line in ours), result.stdout
    assert all(line.startswith("gpucheck mpi:") for line in ours), result.stdout
    # The progress line a job line closes keeps its "[ nn%]".
    for i, line in enumerate(lines[1:], start=1):
        if line.startswith("gpucheck mpi:") and re.fullmatch(r"(\S+\.py )?[.sxXFE]+",
                                                                 lines[i - 1].rstrip()):
            raise AssertionError(f"{lines[i - 1]!r} lost its progress figure:\n{result.stdout}")
    assert "4 passed" in result.stdout
