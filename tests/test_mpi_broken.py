"""Deliberately broken distributed implementations are rejected by the MPI conformance checks.

Each broken implementation runs through the same hypothesis-driven check as
the bundled one, on real ranks under ``mpiexec``; the broken test must fail
with a message that points at the bug, and its control (the bundled
implementation, same strategy) must pass.
"""

from __future__ import annotations

import re
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


RUN_LIMIT = 240

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


def test_broken_distributed_implementations_are_rejected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v",
                                           "--gpu-mpi-max-ranks=3", timeout=RUN_LIMIT)
    out = result.stdout.str()
    for test in ("test_neighbours", "test_ghost_width", "test_corners",
                 "test_decomposition_in_allreduce", "test_decomposition_in_scatter_gather"):
        assert re.search(rf"::{test}\[bundled\] PASSED", out), f"control {test} must pass"
    result.assert_outcomes(passed=5, failed=5)

    swapped = _failure(out, "test_neighbours[swapped]")
    assert "ghost cell" in swapped
    assert "cells wrong" in swapped
    off_by_one = _failure(out, "test_ghost_width[off-by-one]")
    assert re.search(r"ghost cell \d+ \(global -?\d+\) is np.float64\(-1.0\)", off_by_one)
    corners = _failure(out, "test_corners[no-corners]")
    assert "corner ghost cell" in corners
    for test in ("test_decomposition_in_allreduce[lossy]",
                 "test_decomposition_in_scatter_gather[lossy]"):
        lossy = _failure(out, test)
        assert "element(s) lost (the remainder of an uneven split?)" in lossy
    assert re.search(r"global sum is np.int64\(-?\d+\), expected",
                     _failure(out, "test_decomposition_in_allreduce[lossy]"))
    assert "result has shape" in _failure(out, "test_decomposition_in_scatter_gather[lossy]")


def _failure(out: str, test: str) -> str:
    start = out.index(f"_ {test} _")
    stop = out.find("\n___", start + len(test) + 4)
    return out[start : stop if stop > 0 else None]
