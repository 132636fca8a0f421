"""Spawned MPI items under pytest-xdist share jobs, as in a serial run, and keep
their verdicts.

A worker batches the MPI items it has already been given (its xdist queue)
into one ``mpiexec`` job per rank count.  A rank that segfaults in the middle
of a batch fails its own test with the rank and the cause; the items of the
batch it never reached run in a fresh job and pass.  Each test records its
rank-0 process id, so the number of jobs is counted, not assumed.  The run is
``python -m pytest -n 2`` in a subprocess, as users type it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import user_runs

# Real mpiexec jobs under xdist workers: the slow tier (the README's full command runs it).
pytestmark = pytest.mark.slow

RUN_LIMIT = 400
#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in what is checked here.
LEAN = ("-p", "no:hypothesispytest")

CRASH = '''
import ctypes
import os

import pytest


def _record(name, rank):
    if rank == 0:
        with open(os.path.join(os.environ["JOB_PIDS"], name), "w") as handle:
            handle.write(str(os.getpid()))


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("n", range(3))
def test_before(mpi_comm, mpi_rank, n):
    _record(f"before-{n}", mpi_rank)
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=2)
def test_rank_1_segfaults(mpi_comm, mpi_rank):
    _record("crash", mpi_rank)
    if mpi_rank == 1:
        ctypes.string_at(0)  # reads address 0: the rank dies with SIGSEGV
    mpi_comm.Barrier()


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("n", range(3))
def test_after(mpi_comm, mpi_rank, n):
    _record(f"after-{n}", mpi_rank)
    mpi_comm.Barrier()
'''


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return user_runs.run_pytest(project, *LEAN, *args, timeout=RUN_LIMIT,
                                extra_env={"JOB_PIDS": str(project / "pids")})


def test_xdist_batches_mpi_items_and_a_crash_fails_only_its_test(tmp_path: Path) -> None:
    # --dist=loadfile gives the whole file to one worker, so the batches are known;
    # under the default --dist=load a worker batches the chunk it was given.
    (tmp_path / "test_crash.py").write_text(CRASH)
    (tmp_path / "pids").mkdir()
    result = run_pytest(tmp_path, "-n", "2", "--dist=loadfile", "-v", "--gpu-mpi-max-ranks=2")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "1 failed, 6 passed" in result.stdout, output
    # xdist's -v lines: "[gw0] [ 14%] PASSED test_crash.py::test_before[0]"
    assert "FAILED test_crash.py::test_rank_1_segfaults" in result.stdout, output
    for name in ("before[0]", "before[1]", "before[2]", "after[0]", "after[1]", "after[2]"):
        assert f"PASSED test_crash.py::test_{name}" in result.stdout, output
    assert "while running this test; it never reported a result." in output
    assert "Fatal error on rank(s) 1." in output
    assert "Fatal Python error: Segmentation fault" in output

    pids = {path.name: path.read_text() for path in (tmp_path / "pids").iterdir()}
    assert set(pids) == {"before-0", "before-1", "before-2", "crash",
                         "after-0", "after-1", "after-2"}, pids
    # One worker has the whole file: the batch up to the crash, then the rest in a
    # fresh job (as serially); one job per item would be 7.
    assert len(set(pids.values())) == 2, pids
    assert pids["crash"] == pids["before-0"] != pids["after-0"], pids
