"""Can device buffers be passed to MPI here?  Found out by trying, in a child process.

mpi4py offers no reliable query (``MPIX_Query_cuda_support`` is an MPICH/Open
MPI extension, and says what the library was built with, not whether this
job's transport handles device memory).  So a child process allreduces a real
device buffer of the backend: passing a device pointer to an MPI that is not
GPU-aware typically crashes (it dereferences the pointer on the host), which
would kill a test session, hence the child.  The answer is cached per backend.

This module is both sides: :func:`gpu_aware` in the test process, and the
child it starts, ``python -m pytest_gpucheck.mpi.gpu_aware BACKEND [DEVICE]``
(:func:`main`), which allreduces a device buffer and prints a JSON verdict.
The special backend ``invalid-device-pointer`` passes MPI a buffer whose
pointer no host code may read -- what a device pointer is to an MPI that is
not GPU-aware -- so the detection of a crash can itself be tested on any machine.
"""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

from pytest_gpucheck.environment import without_launcher

PROBE_TIMEOUT = 120.0
#: The probe's test of itself: a buffer MPI cannot read on the host.
INVALID_POINTER = "invalid-device-pointer"


@dataclass(frozen=True)
class GpuAwareness:
    """Whether a backend's device buffers went through MPI correctly, and what happened."""

    backend: str
    supported: bool
    detail: str


def probe_environment() -> dict[str, str]:
    """The probe child's environment: it starts as a singleton MPI process instead of
    trying to join the job of the rank that ran it."""
    return without_launcher()


@cache
def gpu_aware(backend: str, device_index: int = 0, timeout: float = PROBE_TIMEOUT) -> GpuAwareness:
    """Run the probe child for ``backend`` and read its verdict (never raises)."""
    from pytest_gpucheck.processes import CommandTimeout, run_command

    command = [sys.executable, "-m", "pytest_gpucheck.mpi.gpu_aware", backend,
               str(device_index)]
    done = run_command(command, timeout=timeout, env=probe_environment())
    if isinstance(done, CommandTimeout):
        return GpuAwareness(backend, False, f"the device-buffer allreduce hung for {timeout:g} s")
    if isinstance(done, str):
        return GpuAwareness(backend, False, f"the probe could not start: {done}")
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return GpuAwareness(backend, False, f"the device-buffer allreduce crashed the process "
                            f"({name}): MPI is not GPU-aware")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            verdict = json.loads(line)
            return GpuAwareness(backend, bool(verdict["supported"]), str(verdict["detail"]))
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return GpuAwareness(backend, False,
                        f"the probe exited with code {done.returncode} without a verdict: {tail}")


class _UnreadableBuffer:
    """A CUDA-Array-Interface buffer at an address no process maps (page 0)."""

    __cuda_array_interface__: dict[str, Any] = {  # noqa: RUF012 - the interface is a dict
        "shape": (4,), "typestr": "<f8", "data": (8, False), "strides": None, "version": 3,
    }


def _verdict(supported: bool, detail: str) -> None:
    print(json.dumps({"supported": supported, "detail": detail}), flush=True)


# -- the child ----------------------------------------------------------------------
def main(argv: list[str]) -> int:
    """The probe child: allreduce a device buffer of backend ``argv[0]``, print the verdict."""
    name = argv[0]
    device = int(argv[1]) if len(argv) > 1 else 0
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_SELF  # a singleton job: the reduction still goes through MPI's copy path
    if name == INVALID_POINTER:
        out = np.empty(4)
        comm.Allreduce(_UnreadableBuffer(), out, op=MPI.SUM)
        _verdict(True, "MPI read a buffer at address 8 without crashing")
        return 0
    from pytest_gpucheck.backends import get_backend

    backend = get_backend(name, device)
    probe = backend.probe()
    if not probe.available:
        _verdict(False, f"{name} is not available: {probe.reason}")
        return 0
    from pytest_gpucheck.backends.base import BackendUnavailable

    try:
        ops = backend.mpi_ops()  # not ops_for: this child runs no test to skip
    except BackendUnavailable as exc:
        _verdict(False, str(exc))
        return 0
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
