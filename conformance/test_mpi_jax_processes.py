"""JAX across processes: ``jax.distributed.initialize`` on 2 ranks under the MPI launcher and
a cross-process ``psum`` over every device of every process, against the global sum.

The job is launched by the test (``jax.distributed.initialize`` must precede any other
use of JAX in a process); see :mod:`pytest_gpucheck.mpi.jax_processes`.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_gpucheck.mpi.jax_processes import run_job
from pytest_gpucheck.mpi.launcher import find_executable

RANKS = 2


@pytest.mark.gpu_backends("jax-cpu")
@pytest.mark.gpu_family("mpi-patterns")
def test_jax_cross_process_psum(gpu_backend: Any) -> None:
    """Each process holds its devices' blocks; ``psum`` over all of them is the global sum."""
    mpiexec = find_executable("mpiexec")
    if mpiexec is None:
        pytest.skip("needs mpiexec: pip install 'pytest-gpucheck[mpi]'")
    pytest.importorskip("mpi4py")
    result = run_job(mpiexec, RANKS, seed=7, env=dict(os.environ))
    problem = result.problem(RANKS)
    assert problem is None, problem
