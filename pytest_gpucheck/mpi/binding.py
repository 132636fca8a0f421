"""Rank to device: each rank takes its node-local rank's GPU, round robin when oversubscribed.

The node-local rank comes from splitting ``COMM_WORLD`` by shared memory
(``MPI.COMM_TYPE_SHARED``), which is right for every launcher; it is exported
as ``PYTEST_GPUCHECK_LOCAL_RANK`` *before* the core selects the device (and
before any framework creates a CUDA context), so
:func:`pytest_gpucheck.backends.devices.select_device` binds rank ``r`` to visible device
``local_rank % device_count``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from pytest_gpucheck.environment import LOCAL_RANK_VARIABLE


@dataclass(frozen=True)
class RankBinding:
    """Where one rank runs and which device it uses."""

    rank: int
    host: str
    local_rank: int
    local_size: int
    device_index: int
    device_count: int
    how: str
    #: The physical GPU (PCI bus id), filled in on the rank that makes the binding.
    #: Visible indices cannot tell: under SLURM each task may see its own GPU as 0.
    device_id: str = ""

    def __post_init__(self) -> None:
        if not self.device_id and self.device_count:
            from pytest_gpucheck.backends.devices import cuda_driver

            devices = cuda_driver().devices
            if self.device_index < len(devices) and devices[self.device_index].pci_bus_id:
                object.__setattr__(self, "device_id", devices[self.device_index].pci_bus_id)

    @property
    def gpu(self) -> str:
        """The GPU this rank uses, as comparable across ranks as the driver allows."""
        return self.device_id or f"visible device {self.device_index}"


def node_local_rank(world: Any) -> tuple[int, int]:
    """This rank's index and the rank count on its node (a shared-memory split of ``world``)."""
    from mpi4py import MPI

    node = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.Get_rank())
    try:
        return node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def export_local_rank(local_rank: int) -> None:
    """Publish the node-local rank where device selection reads it first."""
    os.environ[LOCAL_RANK_VARIABLE] = str(local_rank)


def describe_bindings(bindings: list[RankBinding]) -> list[str]:
    """Header lines: one per rank, plus a warning per oversubscribed node."""
    lines = []
    for b in bindings:
        device = f"device {b.device_index}" if b.device_count else "no GPU"
        lines.append(
            f"  rank {b.rank}: host {b.host}, local rank {b.local_rank}/{b.local_size}, {device} "
            f"({b.how})"
        )
    sharing: dict[tuple[str, str], list[int]] = {}
    for b in bindings:
        if b.device_count:
            sharing.setdefault((b.host, b.gpu), []).append(b.rank)
    for (host, gpu), ranks in sharing.items():
        if len(ranks) > 1:
            lines.append(
                f"  WARNING: {len(ranks)} ranks share GPU {gpu} on {host} (ranks "
                f"{', '.join(map(str, ranks))}): oversubscribed, devices assigned round robin"
            )
    return lines


def agree_on_backends(world: Any, selection: Any) -> list[str]:
    """Make every rank see the same backends as available; collective, call on every rank.

    A backend that probes available on one rank and not on another (exclusive-
    process compute mode, a device another job holds, a missing library on one
    node) would let rank 0 enter a test's collectives while the others skip it:
    the job hangs until the watchdog.  So the probes are compared before
    collection, and such a backend is made unavailable everywhere, with the
    first failing rank's reason.  Returns one header line per backend changed.
    """
    from pytest_gpucheck.backends.base import Probe

    mine = {name: (probe.available, probe.reason) for name, probe in selection.probes.items()}
    everyone: list[dict[str, tuple[bool, str]]] = world.allgather(mine)
    lines = []
    for name, (available, _) in mine.items():
        failing = [(rank, answers.get(name, (False, "not selected there"))[1])
                   for rank, answers in enumerate(everyone)
                   if not answers.get(name, (False, ""))[0]]
        if available and failing:
            rank, reason = failing[0]
            selection.backend(name)._probe_result = Probe.missing(
                f"unavailable on rank {rank} ({reason}); an MPI run uses a backend only "
                "where every rank can")
            lines.append(f"  {name}: unavailable on rank {rank}, so skipped on every rank")
    selection.__dict__.pop("probes", None)  # the cached probes are re-read from the backends
    return lines


def this_host() -> str:
    return socket.gethostname()
