"""Several steps of the distributed 1-D heat equation equal the single-domain result.

Ghost width 1, non-periodic rank chain (``MPI.PROC_NULL`` at the ends), walls
held at 0 as in ``pytest_gpucheck.reference_kernels.stencils.heat_steps_1d``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpucheck.mpi.checks import check_heat_steps_1d
from pytest_gpucheck.mpi.hypothesis_lockstep import assert_same_example, mpi_settings

pytestmark = [pytest.mark.mpi(ranks=[2, 3, 4], timeout=120), pytest.mark.gpu_family("mpi")]


@mpi_settings(max_examples=6)
@given(data=st.data())
def test_heat_steps_1d(data: st.DataObject, gpu_backend: Any, mpi_comm: Any,
                       mpi_transport: Any) -> None:
    size = mpi_comm.Get_size()
    n = data.draw(st.integers(max(size, 3), size + 21), label="n")
    steps = data.draw(st.integers(0, 6), label="steps")
    alpha = data.draw(st.sampled_from([0.1, 0.25, 0.5]), label="alpha")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    assert_same_example(mpi_comm, (n, steps, alpha, seed))
    u = np.random.default_rng(seed).random(n)
    check_heat_steps_1d(mpi_comm, gpu_backend, mpi_transport, u, alpha, steps)
