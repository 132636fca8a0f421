"""GPU-aware MPI detection: a real device-buffer allreduce in a child process decides."""

from __future__ import annotations

import importlib.util

import pytest
from user_runs import REPO, run_command

from pytest_gpucheck.mpi.gpu_aware import INVALID_POINTER, gpu_aware

pytestmark = pytest.mark.slow

pytest.importorskip("mpi4py", reason="needs mpi4py: pip install 'pytest-gpucheck[mpi]'")


def test_host_memory_goes_through_mpi() -> None:
    verdict = gpu_aware("numpy")
    assert verdict.supported, verdict.detail


def test_a_pointer_mpi_cannot_read_is_detected_as_a_crash_not_a_crashed_session() -> None:
    # What a device pointer is to an MPI that is not GPU-aware: the child dies, we answer.
    verdict = gpu_aware(INVALID_POINTER)
    assert not verdict.supported
    assert "crashed the process (SIGSEGV)" in verdict.detail


def test_an_unavailable_backend_is_not_gpu_aware_and_says_why() -> None:
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the probe answers for real")
    verdict = gpu_aware("cupy")
    assert not verdict.supported
    assert "cupy is not available" in verdict.detail


def test_the_probe_runs_from_inside_a_rank() -> None:
    # The child must start as an MPI process of its own, not try to join the rank's job.
    import sys

    from pytest_gpucheck.mpi.launcher import find_executable

    mpiexec = find_executable("mpiexec")
    if mpiexec is None:
        pytest.skip("needs mpiexec")
    # Rank 0 prints every rank's answer in one line: two ranks printing at once reach
    # mpiexec's stdout interleaved mid-line ("01 True" / " True" was seen in CI).
    code = (
        "from mpi4py import MPI\n"
        "from pytest_gpucheck.mpi.gpu_aware import gpu_aware\n"
        "world = MPI.COMM_WORLD\n"
        "answers = world.gather((world.Get_rank(), gpu_aware('numpy').supported), root=0)\n"
        "if world.Get_rank() == 0:\n"
        "    print('answers', sorted(answers), flush=True)\n"
    )
    done = run_command([mpiexec, "-n", "2", sys.executable, "-c", code], REPO, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answers [(0, True), (1, True)]" in done.stdout.splitlines(), done.stdout + done.stderr
