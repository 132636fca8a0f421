"""A cross-process reduction that only sums the shards this process holds is rejected by the
JAX-across-processes check, on 2 real ranks under ``mpiexec``; the bundled ``psum`` passes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from user_runs import user_env

from pytest_gpucheck.mpi.jax_processes import run_job
from pytest_gpucheck.mpi.launcher import find_executable

pytestmark = pytest.mark.slow

BROKEN = '''
import jax.numpy as jnp


def local_shards_only(array, mesh):
    """Sums the shards this process can address, as if they were the whole array."""
    return jnp.sum(jnp.concatenate([shard.data for shard in array.addressable_shards]))[None]
'''


def test_local_only_sum_is_rejected_and_psum_passes(tmp_path: Path) -> None:
    mpiexec = find_executable("mpiexec")
    if mpiexec is None:
        pytest.skip("needs mpiexec: pip install 'pytest-gpucheck[mpi]'")
    pytest.importorskip("jax")
    pytest.importorskip("mpi4py")
    (tmp_path / "broken_jax_reduction.py").write_text(BROKEN, encoding="utf-8")
    env = user_env({"PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(Path(__file__).resolve().parents[2])])})
    broken = run_job(mpiexec, 2, seed=3, impl="broken_jax_reduction:local_shards_only", env=env)
    problem = broken.problem(2)
    assert problem is not None
    assert problem.startswith("wrong rank "), problem
    assert ", expected " in problem
    assert run_job(mpiexec, 2, seed=3, env=env).problem(2) is None


def test_a_job_ended_at_its_timeout_is_never_a_pass() -> None:
    """Every rank printed its ``ok`` and the launcher, asked to end at the timeout
    (SIGTERM), exited 0: still not a pass (without the check: None)."""
    from pytest_gpucheck.mpi.jax_processes import JobResult

    verdicts = ["ok rank 0 sum 1.0", "ok rank 1 sum 1.0"]
    assert JobResult(0, verdicts, "").problem(2) is None
    problem = JobResult(0, verdicts, "...\n(ended after 120 s)", killed=True).problem(2)
    assert problem is not None
    assert problem.startswith("the job did not end within its timeout"), problem
