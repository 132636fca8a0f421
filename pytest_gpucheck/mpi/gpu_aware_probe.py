"""Child process of :mod:`.gpu_aware`: allreduce a device buffer, print a JSON verdict.

``python -m pytest_gpucheck.mpi.gpu_aware_probe BACKEND [DEVICE]``.  The
special backend ``invalid-device-pointer`` passes MPI a buffer whose pointer
no host code may read -- what a device pointer is to an MPI that is not
GPU-aware -- so the detection of a crash can itself be tested on any machine.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

INVALID_POINTER = "invalid-device-pointer"


class _UnreadableBuffer:
    """A CUDA-Array-Interface buffer at an address no process maps (page 0)."""

    __cuda_array_interface__: dict[str, Any] = {  # noqa: RUF012 - the interface is a dict
        "shape": (4,), "typestr": "<f8", "data": (8, False), "strides": None, "version": 3,
    }


def _verdict(supported: bool, detail: str) -> None:
    print(json.dumps({"supported": supported, "detail": detail}), flush=True)


def main(argv: list[str]) -> int:
    name = argv[0]
    device = int(argv[1]) if len(argv) > 1 else 0
    from mpi4py import MPI

    comm = MPI.COMM_SELF  # a singleton job: the reduction still goes through MPI's copy path
    if name == INVALID_POINTER:
        out = np.empty(4)
        comm.Allreduce(_UnreadableBuffer(), out, op=MPI.SUM)
        _verdict(True, "MPI read a buffer at address 8 without crashing")
        return 0
    from ..backends import get_backend

    backend = get_backend(name, device)
    probe = backend.probe()
    if not probe.available:
        _verdict(False, f"{name} is not available: {probe.reason}")
        return 0
    from .device_ops import ops_for

    ops = ops_for(backend)
    if not ops.receives_in_place:
        _verdict(False, f"{name} arrays are immutable: MPI cannot receive into them")
        return 0
    values = np.arange(1.0, 5.0)
    send = ops.to_device(values)
    receive = ops.empty((4,), np.dtype(np.float64))
    ops.synchronize()
    comm.Allreduce(send, receive, op=MPI.SUM)
    # A point-to-point message too, not only the reduction's copy path.
    strip = ops.take(send, (slice(2, 4),))
    arrived = ops.empty((2,), np.dtype(np.float64))
    ops.synchronize()
    comm.Sendrecv(strip, 0, recvbuf=arrived, source=0)
    got = np.concatenate([ops.to_host(receive)[:2], ops.to_host(arrived)])
    if not np.array_equal(got, values):
        _verdict(False, f"the device-buffer allreduce and sendrecv returned {got.tolist()} "
                        f"instead of {values.tolist()}")
        return 0
    _verdict(True, f"allreduce of {name} device buffers returned the right values")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
