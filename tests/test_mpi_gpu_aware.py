"""GPU-aware MPI detection: a real device-buffer allreduce in a child process decides."""

from __future__ import annotations

import importlib.util

import pytest

from pytest_gpucheck.mpi.gpu_aware import gpu_aware
from pytest_gpucheck.mpi.gpu_aware_probe import INVALID_POINTER

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
