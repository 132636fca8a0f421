"""Allreduce of sums and dot products, and scatter / compute / gather, on every selected backend.

Integer-valued inputs keep every partial result exact, so an element lost by
the decomposition or counted twice changes the answer.  Sizes include ones
smaller than the rank count (ranks with empty blocks) and ones it does not
divide.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpucheck.mpi.checks import check_allreduce, check_scatter_compute_gather
from pytest_gpucheck.mpi.hypothesis_lockstep import assert_same_example, mpi_settings

pytestmark = [pytest.mark.mpi(ranks=[2, 3, 4], timeout=120), pytest.mark.gpu_family("mpi")]


def _values(seed: int, n: int, dtype: str) -> np.ndarray:
    return np.random.default_rng(seed).integers(-1000, 1000, n).astype(dtype)


@mpi_settings(max_examples=8)
@given(n=st.integers(0, 40), seed=st.integers(0, 2**16),
       dtype=st.sampled_from(["float64", "int64"]), dot=st.booleans())
def test_allreduce_sum_and_dot(n: int, seed: int, dtype: str, dot: bool, gpu_backend: Any,
                               mpi_comm: Any, mpi_transport: Any) -> None:
    assert_same_example(mpi_comm, (n, seed, dtype, dot))
    x = _values(seed, n, dtype)
    y = _values(seed + 1, n, dtype) if dot else None
    check_allreduce(mpi_comm, gpu_backend, mpi_transport, x, y)


@mpi_settings(max_examples=8)
@given(n=st.integers(0, 40), seed=st.integers(0, 2**16),
       alpha=st.sampled_from([2.0, -0.5, 3.0]))
def test_scatter_compute_gather(n: int, seed: int, alpha: float, gpu_backend: Any,
                                mpi_comm: Any, mpi_transport: Any) -> None:
    assert_same_example(mpi_comm, (n, seed, alpha))
    x = _values(seed, n, "float64")
    y = _values(seed + 1, n, "float64")
    check_scatter_compute_gather(mpi_comm, gpu_backend, mpi_transport, alpha, x, y)
