"""Deliberately broken distributed implementations and patterns are rejected by the MPI
conformance checks.

Each broken implementation runs through the same hypothesis-driven check as
the bundled one, as a user's own test file on real ranks under ``mpiexec``; the
broken test must fail with a message that points at the bug, and its control
(the bundled implementation, same strategy) must pass.  Both files run in one
spawned session (one job per rank count), read by both tests.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from mpi_runs import NEEDS_MPIEXEC, failure_section, run_user_pytest, this_checkout, verdicts

pytestmark = [pytest.mark.slow, NEEDS_MPIEXEC]

#: Seconds the session may take: two jobs (2 and 3 ranks) on a loaded machine.
RUN_LIMIT = 420

BROKEN = '''
import pytest
from hypothesis import given, strategies as st

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.mpi import distributed
from pytest_gpucheck.mpi.checks import (
    check_allreduce, check_halo_exchange_1d, check_halo_exchange_2d,
    check_scatter_compute_gather,
)
from pytest_gpucheck.mpi.distributed import exchange_axis
from pytest_gpucheck.mpi.hypothesis_lockstep import mpi_settings
from pytest_gpucheck.mpi.transport import DirectTransport

import numpy as np

NUMPY = get_backend("numpy")
DIRECT = DirectTransport()


def swapped_neighbours_1d(comm, a, width, ops, transport):
    """Sends each strip to the wrong side (upper and lower neighbour swapped)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    return exchange_axis(comm, a, width, 0, (rank + 1) % size, (rank - 1) % size, ops, transport)


def corners_dropped_2d(cart, a, width, ops, transport):
    """The second pass exchanges interior columns only, so corner ghosts are never filled."""
    lower, upper = cart.Shift(1, 1)
    a = exchange_axis(cart, a, width, 1, lower, upper, ops, transport)
    lower, upper = cart.Shift(0, 1)
    exchange_axis(cart, a[:, width : a.shape[1] - width], width, 0, lower, upper, ops, transport)
    return a


def width_off_by_one_1d(comm, a, width, ops, transport):
    """Exchanges one ghost layer too few."""
    return distributed.halo_exchange_1d(comm, a, max(width - 1, 0), ops, transport)


def remainder_lost(n, parts, index):
    """Every rank takes n // parts elements: the remainder of an uneven split is dropped."""
    base = n // parts
    return index * base, (index + 1) * base


def _width_and_n(data, size):
    width = data.draw(st.integers(1, 3), label="width")
    return width, data.draw(st.integers(size * width, size * width + 9), label="n")


@pytest.mark.mpi(ranks=3)
@pytest.mark.parametrize("exchange", [distributed.halo_exchange_1d, swapped_neighbours_1d],
                         ids=["bundled", "swapped"])
@mpi_settings(max_examples=10)
@given(data=st.data())
def test_neighbours(data, exchange, mpi_comm):
    width, n = _width_and_n(data, mpi_comm.Get_size())
    check_halo_exchange_1d(mpi_comm, NUMPY, DIRECT, n, width, exchange=exchange)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("exchange", [distributed.halo_exchange_1d, width_off_by_one_1d],
                         ids=["bundled", "off-by-one"])
@mpi_settings(max_examples=10)
@given(data=st.data())
def test_ghost_width(data, exchange, mpi_comm):
    width, n = _width_and_n(data, mpi_comm.Get_size())
    check_halo_exchange_1d(mpi_comm, NUMPY, DIRECT, n, width, exchange=exchange)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("exchange", [distributed.halo_exchange_2d, corners_dropped_2d],
                         ids=["bundled", "no-corners"])
@mpi_settings(max_examples=10)
@given(width=st.integers(1, 2), extra=st.integers(0, 4))
def test_corners(width, extra, exchange, mpi_comm):
    shape = (2 * width + extra, width + extra)  # the process grid is 2 x 1
    check_halo_exchange_2d(mpi_comm, NUMPY, DIRECT, shape, width, exchange=exchange)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("partition", [None, remainder_lost], ids=["bundled", "lossy"])
@mpi_settings(max_examples=10)
@given(n=st.integers(0, 30), seed=st.integers(0, 100))
def test_decomposition_in_allreduce(n, seed, partition, mpi_comm):
    x = np.random.default_rng(seed).integers(-9, 10, n).astype("int64")
    kwargs = {} if partition is None else {"partition": partition}
    check_allreduce(mpi_comm, NUMPY, DIRECT, x, **kwargs)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("partition", [None, remainder_lost], ids=["bundled", "lossy"])
@mpi_settings(max_examples=10)
@given(n=st.integers(0, 30))
def test_decomposition_in_scatter_gather(n, partition, mpi_comm):
    x = np.arange(n, dtype="float64")
    kwargs = {} if partition is None else {"partition": partition}
    check_scatter_compute_gather(mpi_comm, NUMPY, DIRECT, 2.0, x, x + 1, **kwargs)
'''


BROKEN_PATTERNS = '''
import numpy as np
import pytest
from hypothesis import given, strategies as st

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.mpi.hypothesis_lockstep import mpi_settings
from pytest_gpucheck.mpi.patterns import (
    check_monte_carlo_streams, check_row_block_matmul, independent_samples,
)
from pytest_gpucheck.mpi.transport import DirectTransport

NUMPY = get_backend("numpy")
DIRECT = DirectTransport()


def remainder_dropped(m, parts, index):
    """Every rank takes m // parts rows: the remainder of an uneven split is dropped."""
    base = m // parts
    return index * base, (index + 1) * base


def shared_seed(comm, seed, n):
    """Every rank seeds its generator with the same seed."""
    return np.random.default_rng(seed).random((n, 2))


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("partition", [None, remainder_dropped], ids=["bundled", "remainder"])
@mpi_settings(max_examples=8)
@given(m=st.integers(0, 9), seed=st.integers(0, 100))
def test_matmul(m, seed, partition, mpi_comm):
    rng = np.random.default_rng(seed)
    a = rng.integers(-9, 10, (m, 3)).astype("int64")
    b = rng.integers(-9, 10, (3, 2)).astype("int64")
    kwargs = {} if partition is None else {"partition": partition}
    check_row_block_matmul(mpi_comm, NUMPY, DIRECT, a, b, **kwargs)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("draw", [independent_samples, shared_seed], ids=["bundled", "shared"])
@mpi_settings(max_examples=3)
@given(seed=st.integers(0, 2**31 - 1))
def test_streams(seed, draw, mpi_comm):
    check_monte_carlo_streams(mpi_comm, seed, 2048, draw=draw)
'''


#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in what is checked here.
LEAN = ("-p", "no:hypothesispytest")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One spawned session of both files: a 3-rank job (test_neighbours), a 2-rank job."""
    project = tmp_path_factory.mktemp("broken")
    (project / "test_broken.py").write_text(BROKEN, encoding="utf-8")
    (project / "test_broken_patterns.py").write_text(BROKEN_PATTERNS, encoding="utf-8")
    return run_user_pytest(project, *LEAN, "-v", "--gpu-mpi-max-ranks=3", timeout=RUN_LIMIT,
                           extra_env=this_checkout())


def test_broken_distributed_implementations_are_rejected(
        run: subprocess.CompletedProcess[str]) -> None:
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    tests = ("test_neighbours", "test_ghost_width", "test_corners",
             "test_decomposition_in_allreduce", "test_decomposition_in_scatter_gather")
    for test in tests:
        assert re.search(rf"::{test}\[bundled\] PASSED", out), f"control {test} must pass"
    # Each control passed and each broken twin failed, nothing else (no error, no skip).
    broken = ("swapped", "off-by-one", "no-corners", "lossy", "lossy")
    assert sorted(verdicts(out, "test_broken.py")) == sorted(
        [(f"{test}[bundled]", "PASSED") for test in tests]
        + [(f"{test}[{bug}]", "FAILED") for test, bug in zip(tests, broken, strict=True)]
    ), out

    swapped = failure_section(out, "test_neighbours[swapped]")
    assert "ghost cell" in swapped
    assert "cells wrong" in swapped
    off_by_one = failure_section(out, "test_ghost_width[off-by-one]")
    assert re.search(r"ghost cell \d+ \(global -?\d+\) is np.float64\(-1.0\)", off_by_one)
    corners = failure_section(out, "test_corners[no-corners]")
    assert "corner ghost cell" in corners
    for test in ("test_decomposition_in_allreduce[lossy]",
                 "test_decomposition_in_scatter_gather[lossy]"):
        lossy = failure_section(out, test)
        assert "element(s) lost (the remainder of an uneven split?)" in lossy
    assert re.search(r"global sum is np.int64\(-?\d+\), expected",
                     failure_section(out, "test_decomposition_in_allreduce[lossy]"))
    assert "result has shape" in failure_section(out,
                                                 "test_decomposition_in_scatter_gather[lossy]")


def test_broken_patterns_are_rejected(run: subprocess.CompletedProcess[str]) -> None:
    """A row-block matrix multiply that drops the remainder rows of an uneven split, and
    ranks that share one random seed."""
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    for test in ("test_matmul", "test_streams"):
        assert re.search(rf"::{test}\[bundled\] PASSED", out), f"control {test} must pass"
    assert sorted(verdicts(out, "test_broken_patterns.py")) == [
        ("test_matmul[bundled]", "PASSED"), ("test_matmul[remainder]", "FAILED"),
        ("test_streams[bundled]", "PASSED"), ("test_streams[shared]", "FAILED")], out
    remainder = failure_section(out, "test_matmul[remainder]")
    assert "element(s) lost (the remainder of an uneven split?)" in remainder
    assert "C has shape" in remainder
    shared = failure_section(out, "test_streams[shared]")
    assert re.search(r"ranks 0 and 1 drew the same point .*: they share a random stream", shared)
