"""A user's ``conftest.py`` reaches every process that runs their items.

The user's way: a project folder with a ``conftest.py`` that registers
implementations and a hypothesis profile, and the command ``docs/kernels.md``
prints, run with ``python -m pytest`` in that folder.  The bundled suites live
outside the user's rootdir, so the simulator child and the spawned MPI jobs
(which select items by path) must be given the conftest explicitly.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import user_runs

pytestmark = pytest.mark.slow

CPU_TIER = ("numpy", "numba-cpu", "numba-cudasim", "jax-cpu", "torch-cpu")

CONFTEST = '''
import numba
import pytest_gpucheck
from hypothesis import settings
from numba import cuda

# A profile of the user's own: every process that runs their items needs it.
settings.register_profile("huge", max_examples=4, deadline=None)


@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
def add_numpy(a, b, out):
    out[...] = a + b

''' + user_runs.NUMBA_CPU_VECTOR_ADD + '''


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


@pytest_gpucheck.implements("vector_add", backend="numba-cudasim", name="mine")
def add_simulator(a, b, out, launch):
    _add[launch.grid, launch.block](a, b, out)


@pytest_gpucheck.implements("vector_add", backend="jax-cpu", name="mine")
def add_jax(a, b):
    return a + b


@pytest_gpucheck.implements("vector_add", backend="torch-cpu", name="mine")
def add_torch(a, b, out):
    out.copy_(a + b)
'''

#: The same user's conftest.py for a NumPy-only run: the profile and the NumPy
#: registration, without the Numba imports that run's processes (the parent and every
#: rank) do not need.
NUMPY_CONFTEST = '''
import pytest_gpucheck
from hypothesis import settings

settings.register_profile("huge", max_examples=4, deadline=None)


@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
def add_numpy(a, b, out):
    out[...] = a + b
'''


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return user_runs.run_pytest(project, *args, timeout=400)


def test_documented_command_checks_the_users_kernels_on_every_cpu_backend(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    # docs/kernels.md: pytest --gpu-conformance --gpu-impls=user --gpu-backends=... -k vector_add
    result = run_pytest(tmp_path, "--gpu-conformance", "--gpu-impls=user",
                        f"--gpu-backends={','.join(CPU_TIER)}", "-k", "vector_add",
                        "--hypothesis-profile=huge", "-v")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for backend in CPU_TIER:
        assert re.search(rf"test_vector_add\[{backend}:mine\] PASSED", result.stdout), output
    assert re.search(r"\b5 passed\b", result.stdout), output
    # The serial simulator child among them got the profile (an unknown one is "not
    # found") and the registrations.
    assert "not found" not in output, output
    assert "is not registered" not in output, output


def test_simulator_child_gets_the_users_profile_and_registrations(tmp_path: Path) -> None:
    """Under xdist: a worker's simulator child (the serial child is the documented
    command's, above).  One worker: the one item runs in one worker's child either way,
    and a second worker only imported the conftest's Numba for nothing."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    result = run_pytest(tmp_path, "--gpu-conformance", "--gpu-impls=user",
                        "--gpu-backends=numba-cudasim", "-k", "vector_add",
                        "--hypothesis-profile=huge", "-n", "1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "not found" not in output, output
    assert "is not registered" not in output, output
    assert re.search(r"\b1 passed\b", result.stdout), output


def test_spawned_mpi_jobs_get_the_users_profile(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    (tmp_path / "conftest.py").write_text(NUMPY_CONFTEST)
    result = run_pytest(tmp_path, "--gpu-conformance", "--gpu-backends=numpy",
                        "-k", "test_allreduce_sum_and_dot", "--hypothesis-profile=huge",
                        "--gpu-mpi-max-ranks=2", "-v")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "is not registered" not in output, output
    assert re.search(r"test_allreduce_sum_and_dot\[\S*numpy\S*\] PASSED", result.stdout), output
