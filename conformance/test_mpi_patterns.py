"""Distributed patterns from the MPI tutorials against the global reference: a row-block
matrix multiply (scatter A, broadcast B, gather C) on every selected backend, and a
multi-rank Monte Carlo estimate whose ranks must draw independent streams.

Sizes include ones the rank count does not divide (the remainder rows must be
kept) and ones smaller than it (ranks with no rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpucheck.mpi.hypothesis_lockstep import assert_same_example, mpi_settings
from pytest_gpucheck.mpi.patterns import check_monte_carlo_streams, check_row_block_matmul

pytestmark = [pytest.mark.mpi(ranks=[2, 3], timeout=120), pytest.mark.gpu_family("mpi-patterns")]


@mpi_settings(max_examples=6)
@given(m=st.integers(0, 13), k=st.integers(1, 6), n=st.integers(1, 6),
       seed=st.integers(0, 2**16), dtype=st.sampled_from(["float64", "int64"]))
def test_row_block_matmul(m: int, k: int, n: int, seed: int, dtype: str, gpu_backend: Any,
                          mpi_comm: Any, mpi_transport: Any) -> None:
    """``C = A @ B`` by row blocks equals the global product, exactly (integer values)."""
    assert_same_example(mpi_comm, (m, k, n, seed, dtype))
    rng = np.random.default_rng(seed)
    a = rng.integers(-9, 10, (m, k)).astype(dtype)
    b = rng.integers(-9, 10, (k, n)).astype(dtype)
    check_row_block_matmul(mpi_comm, gpu_backend, mpi_transport, a, b)


@pytest.mark.gpu_backends("numpy")
@mpi_settings(max_examples=3)
@given(seed=st.integers(0, 2**31 - 1))
def test_monte_carlo_streams(seed: int, gpu_backend: Any, mpi_comm: Any) -> None:
    """Each rank draws its own stream: no point drawn by two ranks, and the pooled estimate
    of pi within a z-bound of the total count (the stream is the seeding, not the device)."""
    assert_same_example(mpi_comm, seed)
    check_monte_carlo_streams(mpi_comm, seed, 4096)
