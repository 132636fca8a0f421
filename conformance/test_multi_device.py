"""Conformance of data-parallel computations over several devices of one process: a
``psum`` reduction and a ``ppermute`` halo exchange, against the single-device reference.

On the CPU tier JAX presents 4 host devices (``--gpu-host-devices``); a backend with
fewer than two devices skips with the reason.  The checks every call gets are listed
in :mod:`conformance.harness`.
"""

from __future__ import annotations

import pytest

from conformance.harness import Cell, check_implementation
from pytest_gpucheck.multi_device import skip_unless_devices


@pytest.mark.gpu_kernel("sharded_sum")
def test_sharded_sum(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Shards summed on each device and combined with ``psum`` equal ``sum(x)``: exact on
    integer-valued data (a shard lost or counted twice changes the answer)."""
    skip_unless_devices(impl.backend, 2)
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("sharded_heat_step_1d")
def test_sharded_heat_step_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """A heat step on a field sharded over the devices, ghost cells exchanged with
    ``ppermute``, equals the step on one device (shard edges and walls included)."""
    skip_unless_devices(impl.backend, 2)
    check_implementation(impl, request)
