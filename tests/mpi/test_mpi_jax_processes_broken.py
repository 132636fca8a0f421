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
