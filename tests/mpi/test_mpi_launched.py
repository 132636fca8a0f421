"""Launched mode: ``mpiexec -n 2 python -m pytest -m mpi``, every rank runs the session.

Output and the final report come from rank 0 only; failures of marked tests
are collective and labelled by rank; failures of unmarked tests on another rank
are listed by rank 0; the exit status says the run failed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mpi_runs import MPIEXEC, NEEDS_MPIEXEC, run_user_pytest, this_checkout

pytestmark = [pytest.mark.slow, NEEDS_MPIEXEC]

RUN_LIMIT = 120

SCENARIOS = '''
import os

import pytest


@pytest.mark.mpi(ranks=2)
def test_collective_sum(mpi_comm, mpi_rank, mpi_size):
    assert mpi_comm.allreduce(mpi_rank + 1) == mpi_size * (mpi_size + 1) // 2
    assert os.environ["PYTEST_GPUCHECK_LOCAL_RANK"] == str(mpi_rank)


@pytest.mark.mpi(ranks=2)
def test_rank_1_disagrees(mpi_comm, mpi_rank):
    mpi_comm.Barrier()
    assert mpi_rank == 0, "rank 1 disagrees"


@pytest.mark.mpi(ranks=[4, 8])
def test_needs_four(mpi_comm):
    pass


def test_unmarked_fails_on_rank_1_only(mpi_rank):
    assert mpi_rank != 1, "unmarked test broke on rank 1"
'''


#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in what is checked here.
LEAN = ("-p", "no:hypothesispytest")


def _run_launched(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n 2 python -m pytest ARGS`` in ``project``, as a user types it."""
    assert MPIEXEC is not None
    return run_user_pytest(project, *LEAN, *args, timeout=RUN_LIMIT, launcher=(MPIEXEC, "-n", "2"),
                           extra_env=this_checkout())


def test_launched_mode(tmp_path: Path) -> None:
    (tmp_path / "test_launched.py").write_text(SCENARIOS, encoding="utf-8")
    done = _run_launched(tmp_path, "-rs", "--gpu-report=report.json")
    out = done.stdout

    assert out.count("test session starts") == 1  # rank 0 prints, rank 1 is silent
    assert "gpucheck mpi: 2 rank(s) under a launcher" in out
    assert "rank 1: host " in out  # every rank's device binding in the header
    assert "1 failed, 2 passed, 1 skipped" in out
    assert "MPI test failed on rank(s) 1 of 2" in out
    assert "AssertionError: rank 1 disagrees" in out
    assert "needs 4 or 8 MPI ranks; this job has 2" in out
    assert "failures on other MPI ranks" in out
    assert "rank 1: test_launched.py::test_unmarked_fails_on_rank_1_only (call)" in out
    assert "unmarked test broke on rank 1" in out
    assert done.returncode != 0
    # rank 0 alone writes the report, with every rank's device binding
    mpi = json.loads((tmp_path / "report.json").read_text())["sections"]["mpi"]
    assert mpi["mode"] == "launched"
    assert [b["local_rank"] for b in mpi["bindings"]] == [0, 1]


HANG = '''
import numpy as np
import pytest


@pytest.mark.mpi(ranks=2, timeout=3)
def test_rank_1_never_receives(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        mpi_comm.Recv(np.empty(1), source=0, tag=99)
'''


def test_a_hang_under_the_launcher_is_reported_and_the_job_ended(tmp_path: Path) -> None:
    (tmp_path / "test_hang.py").write_text(HANG, encoding="utf-8")
    done = _run_launched(tmp_path)
    output = done.stdout + done.stderr
    assert "test: test_hang.py::test_rank_1_never_receives" in output
    assert "hung (still running the test): rank(s) 1" in output
    assert "mpi_comm.Recv(np.empty(1), source=0, tag=99)" in output
    assert done.returncode != 0
