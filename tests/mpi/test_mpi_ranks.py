"""MPI tests that run on real ranks: ``pytest -m mpi`` spawns them, ``mpiexec -n 2 pytest -m mpi``
runs them on every rank.  The same assertions hold either way."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.mpi.checks import check_allreduce, check_halo_exchange_2d
from pytest_gpucheck.mpi.transport import DirectTransport, StagedTransport
from pytest_gpucheck.selection import get_selection

pytestmark = [pytest.mark.slow, pytest.mark.mpi(ranks=[2, 3, 4], timeout=120)]


def test_fixtures_describe_the_world(mpi_comm: Any, mpi_rank: int, mpi_size: int) -> None:
    from mpi4py import MPI

    assert (mpi_rank, mpi_size) == (MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size())
    # a private duplicate: same group, different context
    assert MPI.Comm.Compare(mpi_comm, MPI.COMM_WORLD) == MPI.CONGRUENT
    assert sorted(mpi_comm.allgather(mpi_rank)) == list(range(mpi_size))


def test_each_rank_is_bound_by_its_node_local_rank(pytestconfig: pytest.Config,
                                                   mpi_comm: Any) -> None:
    from mpi4py import MPI

    node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    assert os.environ["PYTEST_GPUCHECK_LOCAL_RANK"] == str(local_rank)
    device = get_selection(pytestconfig).device
    assert "PYTEST_GPUCHECK_LOCAL_RANK" in device.how
    assert device.index == local_rank % max(1, len(_visible_devices()))


def _visible_devices() -> tuple[Any, ...]:
    from pytest_gpucheck.backends.devices import cuda_driver

    return cuda_driver().devices


@pytest.mark.parametrize("transport", [DirectTransport(), StagedTransport()],
                         ids=["direct", "staged"])
def test_numpy_halo_exchange_2d_with_corners(mpi_comm: Any, transport: Any) -> None:
    check_halo_exchange_2d(mpi_comm, get_backend("numpy"), transport, (7, 5), 2)


def test_numpy_allreduce_with_an_uneven_split(mpi_comm: Any, mpi_size: int) -> None:
    x = np.arange(1, 2 * mpi_size + 2, dtype=np.int64)  # never divisible by the rank count
    check_allreduce(mpi_comm, get_backend("numpy"), StagedTransport(), x, x)
