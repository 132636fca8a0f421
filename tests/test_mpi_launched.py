"""Launched mode: ``mpiexec -n 2 python -m pytest -m mpi``, every rank runs the session.

Output and the final report come from rank 0 only; failures of marked tests
are collective and labelled by rank; failures of unmarked tests on another rank
are listed by rank 0; the exit status says the run failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpucheck.mpi.launcher import find_executable

MPIEXEC = find_executable("mpiexec")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'"
)]
REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _use_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The jobs run in a temporary directory: make them import this checkout's
    # packages (pytest_gpucheck, reference_kernels), installed or not.
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))


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


def _run_launched(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    pytester.makepyfile(test_launched=SCENARIOS)
    command = [str(MPIEXEC), "-n", "2", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
               "-rs", *args]
    return subprocess.run(command, cwd=pytester.path, capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False, stdin=subprocess.DEVNULL)


def test_launched_mode(pytester: pytest.Pytester) -> None:
    done = _run_launched(pytester, "--gpu-report=report.json")
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
    mpi = json.loads((pytester.path / "report.json").read_text())["sections"]["mpi"]
    assert mpi["mode"] == "launched"
    assert [b["local_rank"] for b in mpi["bindings"]] == [0, 1]


def test_launched_mode_selects_with_the_marker(pytester: pytest.Pytester) -> None:
    done = _run_launched(pytester, "-m", "mpi", "-k", "collective_sum")
    assert "1 passed" in done.stdout
    assert done.returncode == 0, done.stdout + done.stderr


HANG = '''
import numpy as np
import pytest


@pytest.mark.mpi(ranks=2, timeout=3)
def test_rank_1_never_receives(mpi_comm, mpi_rank):
    if mpi_rank == 1:
        mpi_comm.Recv(np.empty(1), source=0, tag=99)
'''


def test_a_hang_under_the_launcher_is_reported_and_the_job_ended(pytester: pytest.Pytester
                                                                  ) -> None:
    pytester.makepyfile(test_hang=HANG)
    command = [str(MPIEXEC), "-n", "2", sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    done = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False, stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert "test: test_hang.py::test_rank_1_never_receives" in output
    assert "hung (still running the test): rank(s) 1" in output
    assert "mpi_comm.Recv(np.empty(1), source=0, tag=99)" in output
    assert done.returncode != 0
