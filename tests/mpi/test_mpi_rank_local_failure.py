"""An exception on one rank only ends the job within seconds, naming the rank (G13).

The first H100 run: numba-cuda failed to compile on the rank whose block was not
empty; the rank with the empty block skipped the compile and waited in
``Allreduce``, while the failing rank went on to hypothesis's next example and
waited in ``allgather``, until the test's 120 s timeout.  Here a backend whose
partial sum raises on a non-empty block (what that compile did) runs the bundled
allreduce check under the lockstep settings, as a user's MPI test does.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from user_runs import run_pytest

from pytest_gpucheck.mpi.launcher import find_executable

MPIEXEC = find_executable("mpiexec")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'")]
#: The test's own timeout: the job must end long before it.  The out-of-step rule stops it
#: 10 s after the raise; what else the job's time holds is its ranks' start-up (pytest,
#: hypothesis, NumPy, MPI), about 20 s per process at load 26 on a 2-core machine.  The
#: bound below (TIMEOUT - 15 s) leaves that 95 s; at 60 it left 35 s, which such a
#: start-up comes near.  The bug (a job that waits for the timeout) still takes the
#: whole 120 s and prints "did not finish within its timeout".
TIMEOUT = 120

TEST = f"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpucheck.backends.array_ops import ArrayOps
from pytest_gpucheck.backends.numpy.backend import NumpyBackend
from pytest_gpucheck.mpi.checks import check_allreduce
from pytest_gpucheck.mpi.hypothesis_lockstep import assert_same_example, mpi_settings
from pytest_gpucheck.mpi.transport import StagedTransport


class CompileFails(ArrayOps):
    def partial_sum(self, x):
        if x.shape[0]:  # numba-cuda compiles only for a non-empty block
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")
        return super().partial_sum(x)


class Broken(NumpyBackend):
    def mpi_ops(self):
        return CompileFails(self)


@pytest.mark.mpi(ranks=2, timeout={TIMEOUT})
@mpi_settings(max_examples=8)
@given(n=st.integers(0, 3))
def test_allreduce(n, mpi_comm):
    assert_same_example(mpi_comm, n)
    import numpy as np

    check_allreduce(mpi_comm, Broken(), StagedTransport(), np.arange(n, dtype="float64"))


@pytest.mark.mpi(ranks=2)
def test_after(mpi_comm):
    mpi_comm.Barrier()
"""


def _run(project: Path, *launcher: str) -> tuple[subprocess.CompletedProcess[str], float]:
    (project / "test_rank_local.py").write_text(TEST, encoding="utf-8")
    start = time.monotonic()
    done = run_pytest(project, "-v", "--gpu-mpi-max-ranks=2", launcher=launcher,
                      timeout=3 * TIMEOUT)
    return done, time.monotonic() - start


RAISED = ("check_allreduce raised on this rank: AttributeError: module 'numpy' has no "
          "attribute 'row_stack'")


def test_launched_job_ends_within_seconds_naming_the_rank(tmp_path: Path) -> None:
    assert MPIEXEC is not None
    done, took = _run(tmp_path, MPIEXEC, "-n", "2")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    # Stopped by the out-of-step rule (10 s), not the test's timeout.
    assert "did not finish within its timeout" not in output, output
    assert took < TIMEOUT - 15, (took, output)
    assert ("rank(s) 0 failed and rank(s) 1 did not reach the end of the test within 10 s"
            in output), output
    assert RAISED in output, output
    assert "test_rank_local.py::test_allreduce PASSED" not in output, output


def test_spawned_job_ends_within_seconds_and_the_rest_run(tmp_path: Path) -> None:
    done, _ = _run(tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # The first job (the stopped one) ends long before the test's timeout; the run as a
    # whole also starts a second job for test_after, whose start-up a loaded machine slows.
    first = re.search(r"mpiexec -n 2 finished in ([0-9.]+) s: 0 passed or skipped, 0 failed, "
                      r"2 without a result", output)
    assert first is not None, output
    assert float(first.group(1)) < TIMEOUT - 15, output
    assert "test_rank_local.py::test_allreduce FAILED" in output, output
    assert RAISED in output, output
    assert "test_rank_local.py::test_after PASSED" in output, output
