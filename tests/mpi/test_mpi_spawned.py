"""Spawned mode with a real launcher: plain ``pytest`` runs each mpi test under ``mpiexec -n N``.

One spawned session (job starts cost seconds) runs two files, as a user's project: the
scenarios of each verdict (a pass, a raise on one rank, a hang, counts the launcher cannot
give, the fixture without the marker) and a rank that segfaults.  It runs once, in a
pytest subprocess whose mpi tests are spawned under the ``mpiexec`` of the ``mpich``
wheel, bounded in time, and the tests below read it.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from mpi_runs import NEEDS_MPIEXEC, run_user_pytest, this_checkout, verdicts
from user_runs import LEAN_ENV, LEAN_PLUGINS

pytestmark = [pytest.mark.slow, NEEDS_MPIEXEC]

RUN_LIMIT = 240  # seconds: a scenario that hangs fails here instead of stalling CI

SCENARIOS = '''
import os
import sys

import numpy as np
import pytest


@pytest.mark.mpi(ranks=2)
def test_ranks_talk(mpi_comm, mpi_rank, mpi_size):
    assert mpi_size == 2
    assert mpi_comm.allreduce(mpi_rank + 1) == 3
    # bound to its node-local rank before the core chose the device
    assert os.environ["PYTEST_GPUCHECK_LOCAL_RANK"] == str(mpi_rank)


@pytest.mark.mpi(ranks=2)
def test_raise_on_rank_1(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        raise ZeroDivisionError("only rank 1 divides by zero")
    mpi_comm.Barrier()  # rank 0 waits here for a rank that will never come


@pytest.mark.mpi(ranks=2, timeout=3)
def test_rank_1_never_receives(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        mpi_comm.Recv(np.empty(1), source=0, tag=99)


@pytest.mark.mpi(ranks=[2, 64])
def test_after_the_hang(mpi_comm):
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=64)
def test_too_many_ranks(mpi_comm):
    pass


def test_mpi_fixture_without_marker(mpi_comm):
    pass


def test_parent_never_imports_mpi4py():
    assert "mpi4py" not in sys.modules
'''


def _live_processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that mention ``text`` (ranks left behind)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().split()[2]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(cmdline)
    return found


def _section(out: str, test: str, end: str = "_ test_") -> str:
    """The failure section of ``test`` in pytest's output."""
    start = out.index(f"_ {test} _")
    stop = out.find(end, start + len(test) + 4)
    return out[start : stop if stop > 0 else None]


CRASH = '''
import ctypes

import pytest


@pytest.mark.mpi(ranks=2)
def test_before(mpi_comm):
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=2)
def test_rank_1_segfaults(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        ctypes.string_at(0)  # reads address 0: the rank dies with SIGSEGV
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=2)
def test_after(mpi_comm):
    mpi_comm.Barrier()
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    """The project, its spawned session (``-v -rsP``, at most 2 ranks) and its seconds."""
    project = tmp_path_factory.mktemp("spawned")
    (project / "test_scenarios.py").write_text(SCENARIOS, encoding="utf-8")
    (project / "test_crash.py").write_text(CRASH, encoding="utf-8")
    started = time.monotonic()
    result = run_user_pytest(project, *LEAN_PLUGINS, "-v", "-rsP", "--gpu-mpi-max-ranks=2",
                             timeout=RUN_LIMIT, extra_env={**this_checkout(), **LEAN_ENV})
    return project, result, time.monotonic() - started


def test_spawned_mode(run: tuple[Path, subprocess.CompletedProcess[str], float]) -> None:
    """Every claim about the scenarios' verdicts, and about the session's jobs."""
    project, result, seconds = run
    out = result.stdout
    assert result.returncode == 1, out + result.stderr

    assert verdicts(out, "test_scenarios.py") == [
        ("test_ranks_talk", "PASSED"),
        ("test_raise_on_rank_1", "FAILED"),
        ("test_rank_1_never_receives", "FAILED"),
        ("test_after_the_hang", "PASSED"),  # the session went on after the hang, in a new job
        ("test_too_many_ranks", "SKIPPED"),
        ("test_mpi_fixture_without_marker", "ERROR"),
        ("test_parent_never_imports_mpi4py", "PASSED"),
    ], out
    assert re.search(r"SKIPPED .*needs 64 MPI ranks; the launcher can give 2 here", out), out
    assert "mpi_comm needs MPI ranks: mark the test @pytest.mark.mpi(ranks=N)" in out

    # A raise on rank 1 only: a failed test that names the rank, not a hang.
    raised = _section(out, "test_raise_on_rank_1")
    assert "rank(s) 1 failed and rank(s) 0 did not reach the end of the test" in raised
    assert "ZeroDivisionError: only rank 1 divides by zero" in raised
    assert "mpi_comm.Barrier()" in raised  # where rank 0 was blocked

    # A receive that never comes: stopped at the timeout, hung rank and stacks reported.
    hung = _section(out, "test_rank_1_never_receives")
    assert "did not finish within its timeout of 3 s" in hung
    assert "hung (still running the test): rank(s) 1" in hung
    assert "waiting for the other ranks: rank(s) 0" in hung
    assert re.search(r"rank 1 \(host .*\): running the test", hung)
    assert "mpi_comm.Recv(np.empty(1), source=0, tag=99)" in hung  # rank 1's stack
    assert "outcome.py" in hung
    assert "allgather" in hung

    # The ranks list [2, 64] ran with 2 and says why not with 64 (-rP shows the section).
    assert re.search(r"ran with 2 rank\(s\): \S*mpiexec -n 2; not run with 64 rank\(s\)", out)
    # test_crash.py's 3 tests come first: the first job (all 7) ends at the segfault, the
    # second (the 5 left) at the raise, the third (2) at the hang, the fourth runs the last
    # one: a stopped job costs only the tests after it a restart.
    jobs = re.findall(r"gpucheck mpi: \S*mpiexec -n 2: (\d) test\(s\)", out)
    assert jobs == ["7", "5", "2", "1"], out
    assert _live_processes_mentioning(str(project)) == []  # nothing left behind
    assert seconds < RUN_LIMIT


def test_a_crashed_rank_fails_only_its_test(
        run: tuple[Path, subprocess.CompletedProcess[str], float]) -> None:
    project, result, _ = run
    out = result.stdout
    assert verdicts(out, "test_crash.py") == [
        ("test_before", "PASSED"), ("test_rank_1_segfaults", "FAILED"), ("test_after", "PASSED"),
    ], out
    crashed = _section(out, "test_rank_1_segfaults")
    assert re.search(r"exited with code .* while running this test; it never reported a "
                     r"result\.", crashed), crashed
    lines = crashed.splitlines()
    assert "Fatal error on rank(s) 1." in lines, crashed
    assert "rank 1: faulthandler (the crash site, every thread):" in lines, crashed
    assert "Fatal Python error: Segmentation fault" in lines, crashed
    # The crash site is kept whole: the test's own frame is in the dump.
    assert re.search(r'File ".*test_crash.py", line \d+ in test_rank_1_segfaults', crashed)
    assert _live_processes_mentioning(str(project)) == []
