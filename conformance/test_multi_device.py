"""Conformance of data-parallel computations over several devices of one process: a
``psum`` reduction and a ``ppermute`` halo exchange, against the single-device reference.
With two GPUs or more, peer copies between them with CuPy and PyTorch
(``test_peer_copy``).

On the CPU tier JAX presents 4 host devices (``--gpu-host-devices``), set because
these items carry ``gpu_devices(2)``; a backend with fewer than two devices skips
with the reason.  The checks every call gets are listed
in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation
from pytest_gpucheck.multi_device import skip_unless_devices


@pytest.mark.gpu_kernel("sharded_sum")
@pytest.mark.gpu_devices(2)
def test_sharded_sum(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Shards summed on each device and combined with ``psum`` equal ``sum(x)``: exact on
    integer-valued data (a shard lost or counted twice changes the answer)."""
    skip_unless_devices(impl.backend, 2)
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("sharded_heat_step_1d")
@pytest.mark.gpu_devices(2)
def test_sharded_heat_step_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """A heat step on a field sharded over the devices, ghost cells exchanged with
    ``ppermute``, equals the step on one device (shard edges and walls included)."""
    skip_unless_devices(impl.backend, 2)
    check_implementation(impl, request)


@pytest.mark.gpu_backends("cupy", "torch-cuda")
@pytest.mark.gpu_family("multi-device")
def test_peer_copy(gpu_backend: Any, record_property: Any) -> None:
    """An array copied from GPU 0 to GPU 1 the framework's documented way (CuPy:
    ``cupy.asarray`` under ``cupy.cuda.Device(1)``; torch: ``tensor.to("cuda:1")``) lives
    on GPU 1 with the same values, and the source on GPU 0 is unchanged, also after the
    copy is overwritten.  Whether the GPUs have peer access is recorded (``peer_access``),
    not required: without it the copy goes through the host."""
    from pytest_gpucheck.conformance.implementations.peer_copy_impls import SAMPLES, check_peer_copy

    skip_unless_devices(gpu_backend.name, 2)
    ops = gpu_backend.peer_copy()
    assert ops is not None, f"{gpu_backend.name} has no peer copy (Backend.peer_copy)"
    results = [check_peer_copy(ops, host, 0, 1) for host in SAMPLES]
    record_property("peer_access", results[0].peer_access)
    problems = [problem for result in results for problem in result.problems]
    assert not problems, (f"peer copy GPU 0 -> 1 on {gpu_backend.name} (peer access: "
                          f"{results[0].peer_access}): " + "; ".join(problems))
