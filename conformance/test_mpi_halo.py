"""Distributed periodic halo exchange (1-D and 2-D, corners included) on every selected backend.

Each rank holds a block of a global array plus ``w`` ghost cells per side and
exchanges them with ``Sendrecv``; after the exchange every rank's block must
equal the matching window of the single-domain reference applied to the
global array.  Hypothesis draws the global sizes (including ones the rank
count does not divide) and the ghost width.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpucheck.mpi.checks import check_halo_exchange_1d, check_halo_exchange_2d
from pytest_gpucheck.mpi.hypothesis_lockstep import assert_same_example, mpi_settings

pytestmark = [pytest.mark.mpi(ranks=[2, 3, 4], timeout=120), pytest.mark.gpu_family("mpi")]


@mpi_settings(max_examples=8)
@given(data=st.data())
def test_halo_exchange_1d(data: st.DataObject, gpu_backend: Any, mpi_comm: Any,
                          mpi_transport: Any) -> None:
    size = mpi_comm.Get_size()
    width = data.draw(st.integers(0, 3), label="width")
    n = data.draw(st.integers(size * max(width, 1), size * max(width, 1) + 13), label="n")
    assert_same_example(mpi_comm, (n, width))
    check_halo_exchange_1d(mpi_comm, gpu_backend, mpi_transport, n, width)


@mpi_settings(max_examples=6)
@given(data=st.data())
def test_halo_exchange_2d(data: st.DataObject, gpu_backend: Any, mpi_comm: Any,
                          mpi_transport: Any) -> None:
    from mpi4py import MPI

    dims = MPI.Compute_dims(mpi_comm.Get_size(), 2)
    width = data.draw(st.integers(0, 2), label="width")
    shape = tuple(
        data.draw(st.integers(d * max(width, 1), d * max(width, 1) + 6), label=f"n{axis}")
        for axis, d in enumerate(dims)
    )
    assert_same_example(mpi_comm, (shape, width))
    check_halo_exchange_2d(mpi_comm, gpu_backend, mpi_transport, (shape[0], shape[1]), width)
