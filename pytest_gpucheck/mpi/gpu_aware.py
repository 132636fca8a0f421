"""Can device buffers be passed to MPI here?  Found out by trying, in a child process.

mpi4py offers no reliable query (``MPIX_Query_cuda_support`` is an MPICH/Open
MPI extension, and says what the library was built with, not whether this
job's transport handles device memory).  So a child process allreduces a real
device buffer of the backend: passing a device pointer to an MPI that is not
GPU-aware typically crashes (it dereferences the pointer on the host), which
would kill a test session, hence the child.  The answer is cached per backend.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

from ..launch_env import without_launcher

PROBE_TIMEOUT = 120.0


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
    command = [sys.executable, "-m", "pytest_gpucheck.mpi.gpu_aware_probe", backend,
               str(device_index)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=probe_environment(), stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return GpuAwareness(backend, False, f"the device-buffer allreduce hung for {timeout:g} s")
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
