"""Spawned mode with a real launcher: plain ``pytest`` runs each mpi test under ``mpiexec -n N``.

Every scenario runs in a pytester subprocess whose mpi tests are spawned
under the ``mpiexec`` of the ``mpich`` wheel; each run is bounded in time.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from pytest_gpucheck.mpi.launcher import find_executable

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    find_executable("mpiexec") is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'"
)]

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _use_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The jobs run in a temporary directory: make them import this checkout's
    # packages (pytest_gpucheck, reference_kernels), installed or not.
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))


RUN_LIMIT = 120  # seconds: a scenario that hangs fails here instead of stalling CI

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


def test_spawned_mode(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """One spawned session (job starts cost seconds) and every claim about it."""
    # When this suite itself runs under pytest-xdist, the session below must not
    # look like an xdist worker: a worker batches only the items in its xdist queue.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_scenarios=SCENARIOS)
    started = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", "-rsP",
                                           "--gpu-mpi-max-ranks=2", timeout=RUN_LIMIT)
    seconds = time.monotonic() - started
    out = result.stdout.str()

    result.assert_outcomes(passed=3, failed=2, skipped=1, errors=1)
    result.stdout.fnmatch_lines_random([
        "*::test_ranks_talk PASSED*",
        "*::test_after_the_hang PASSED*",  # the session went on after the hang, in a new job
        "*::test_parent_never_imports_mpi4py PASSED*",
        "*::test_mpi_fixture_without_marker ERROR*",
        "*SKIPPED*needs 64 MPI ranks; the launcher can give 2 here*",
    ])
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
    # The first job (4 tests) ends at the raise, the second (the 2 left) at the hang, the
    # third runs the last one: a stopped job costs only the tests after it a restart.
    jobs = re.findall(r"gpucheck mpi: \S*mpiexec -n 2: (\d) test\(s\)", out)
    assert jobs == ["4", "2", "1"]
    assert _live_processes_mentioning(str(pytester.path)) == []  # nothing left behind
    assert seconds < RUN_LIMIT


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


def test_a_crashed_rank_fails_only_its_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_crash=CRASH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", timeout=RUN_LIMIT)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines_random([
        "*::test_rank_1_segfaults FAILED*",
        "*::test_after PASSED*",
        "*exited with code * while running this test; it never reported a result.*",
        "Fatal error on rank(s) 1.",
        "rank 1: faulthandler (the crash site, every thread):",
        "Fatal Python error: Segmentation fault",
    ])
    # The crash site is kept whole: the test's own frame is in the dump.
    assert re.search(r'File ".*test_crash.py", line \d+ in test_rank_1_segfaults',
                     result.stdout.str())
    assert _live_processes_mentioning(str(pytester.path)) == []


COUNTS = '''
import pytest


@pytest.mark.mpi(ranks=[2, 4])
def test_global_sum(mpi_comm, mpi_size):
    assert mpi_comm.allreduce(1) == mpi_size
'''


def test_a_count_that_did_not_run_shows_in_the_default_output(tmp_path: Path) -> None:
    # docs/mpi.md: the counts that did not run are named. Before, the default output
    # said `1 passed` and the count 4 showed only with -rA.
    from user_runs import run_pytest

    (tmp_path / "test_counts.py").write_text(COUNTS, encoding="utf-8")
    result = run_pytest(tmp_path, "--gpu-mpi-max-ranks=2", timeout=RUN_LIMIT)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    # The sample line docs/mpi.md prints is this run's line, word for word.
    docs = (REPO_ROOT / "docs" / "mpi.md").read_text(encoding="utf-8")
    sample = next(line for line in docs.splitlines()
                  if line.startswith("gpucheck mpi: not run with"))
    assert sample in out.splitlines(), out
    assert "1 passed" in out.splitlines()[-1]
