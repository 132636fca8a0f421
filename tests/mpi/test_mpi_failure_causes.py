"""An MPI failure's line in the short summary says why: the failing rank, the exception
and its first line, or the timeout. The long section keeps the detail; a hang report
shows the test's threads, not the plugin's own.

The user's run read ``FAILED tests/test_mpi_mine.py::test_rank1_fails - [ran with 2
rank(s): .../mpiexec -n 2]``: where it ran, not what went wrong.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from user_runs import run_pytest

from pytest_gpucheck.mpi.launcher import find_executable
from pytest_gpucheck.mpi.outcome import RankOutcome, apply_collective, cause_of
from pytest_gpucheck.mpi.watchdog import (
    RUNNING,
    WAITING,
    Snapshot,
    format_report,
    other_threads_stacks,
    stop_reason,
)

TRACEBACK = """\
    def test_x(mpi_rank):
>       assert mpi_rank == 0, "rank 1 disagrees"
E       AssertionError: rank 1 disagrees
E       assert 1 == 0

t.py:8: AssertionError"""


def test_the_cause_is_the_exception_line_of_the_traceback() -> None:
    assert cause_of(TRACEBACK) == "AssertionError: rank 1 disagrees"
    assert cause_of("E   KeyError: 'a'\n\nduring handling\nE   ValueError: b") == "ValueError: b"
    assert cause_of("a crash\nwith no E lines") == "with no E lines"


def test_the_collective_failure_starts_with_the_failing_rank_and_its_cause() -> None:
    report = pytest.TestReport("t.py::test_x", ("t.py", 1, "test_x"), {}, "passed", None,
                               "call")
    outcomes = [RankOutcome(0, "passed", ""),
                RankOutcome(1, "failed", TRACEBACK, "AssertionError: rank 1 disagrees")]
    text = str(apply_collective(report, outcomes, 2).longrepr)
    first, second, *_ = text.splitlines()
    assert first == "rank 1 of 2: AssertionError: rank 1 disagrees"
    assert second == "MPI test failed on rank(s) 1 of 2"
    assert "E       assert 1 == 0" in text  # the long section keeps the detail
    several = [RankOutcome(0, "failed", "E   KeyError: 'a'", "KeyError: 'a'"),
               RankOutcome(1, "failed", TRACEBACK, "AssertionError: rank 1 disagrees")]
    text = str(apply_collective(report, several, 4).longrepr)
    assert text.splitlines()[0] == "rank 0 and 1 more of 4: KeyError: 'a'"


def test_a_stop_report_names_its_cause_on_one_line() -> None:
    hung = format_report("t.py::test_x", 5.0, 2.0, 2, [
        Snapshot(0, "h", 1, WAITING, ""), Snapshot(1, "h", 2, RUNNING, "  File t.py\n")])
    assert stop_reason(hung) == "timeout of 5 s, rank(s) 1 hung"
    failed = format_report("t.py::test_x", 5.0, 2.0, 2, [
        Snapshot(0, "h", 1, RUNNING, "", mpi_call="Barrier"),
        Snapshot(1, "h", 2, RUNNING, "", failure="E   ZeroDivisionError: division by zero")])
    assert stop_reason(failed) == "rank 1 failed: ZeroDivisionError: division by zero"


def test_a_hang_report_leaves_out_the_plugin_s_own_threads() -> None:
    """The orphan guard's stack (``time.sleep(ORPHAN_POLL)`` in guard.py) was in every
    rank's section of every hang report; a thread of the user's test stays."""
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, name=name, daemon=True)
               for name in ("gpucheck-orphan-guard", "users-prefetch")]
    for thread in threads:
        thread.start()
    try:
        stacks = other_threads_stacks()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert "Thread users-prefetch" in stacks
    assert "gpucheck-orphan-guard" not in stacks


MPIEXEC = find_executable("mpiexec")
REPO_ROOT = Path(__file__).resolve().parents[2]
USER_MPI_TESTS = '''
import time

import pytest


@pytest.mark.mpi(ranks=2)
def test_rank1_fails(mpi_comm, mpi_rank):
    mpi_comm.Barrier()
    assert mpi_rank == 0, "rank 1 disagrees"


@pytest.mark.mpi(ranks=2, timeout=3)
def test_hangs(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        time.sleep(60)
    mpi_comm.Barrier()
'''


@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'")
def test_the_short_summary_of_a_spawned_job_says_why(tmp_path: Path) -> None:
    """The user's ``python -m pytest tests/test_mpi_mine.py -rf``, spawned mode."""
    (tmp_path / "test_mpi_mine.py").write_text(USER_MPI_TESTS, encoding="utf-8")
    done = run_pytest(tmp_path, "-rf", "--gpu-backends=numpy", timeout=180,
                      extra_env={"PYTHONPATH": str(REPO_ROOT), "COLUMNS": "250"})
    out = done.stdout
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, out + done.stderr
    summary = out.split("short test summary info", 1)[1].splitlines()
    assert ("FAILED test_mpi_mine.py::test_rank1_fails - rank 1 of 2: AssertionError: rank 1 "
            "disagrees") in summary, out
    assert "FAILED test_mpi_mine.py::test_hangs - timeout of 3 s, rank(s) 1 hung" in summary, out
    # The long section keeps where it ran, the traceback and the stacks.
    assert "[ran with 2 rank(s): " in out
    assert "E       assert 1 == 0" in out
    assert "time.sleep(60)" in out
    assert "gpucheck-orphan-guard" not in out
    assert "guard.py" not in out
