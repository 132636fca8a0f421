"""Rank to device: each rank takes its node-local rank's GPU, round robin when oversubscribed.

The node-local rank comes from splitting ``COMM_WORLD`` by shared memory
(``MPI.COMM_TYPE_SHARED``), which is right for every launcher; it is exported
as ``PYTEST_GPUCHECK_LOCAL_RANK`` *before* the core selects the device (and
before any framework creates a CUDA context), so
:func:`pytest_gpucheck.devices.select_device` binds rank ``r`` to visible device
``local_rank % device_count``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from ..devices import LOCAL_RANK_VARIABLES

LOCAL_RANK_VARIABLE = LOCAL_RANK_VARIABLES[0]


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

    @property
    def oversubscribed(self) -> bool:
        """More ranks on this node than visible GPUs (devices are shared round robin)."""
        return self.device_count > 0 and self.local_size > self.device_count


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
    seen: set[str] = set()
    for b in bindings:
        if b.oversubscribed and b.host not in seen:
            seen.add(b.host)
            lines.append(
                f"  WARNING: {b.local_size} ranks share {b.device_count} GPU(s) on {b.host}: "
                f"oversubscribed, devices assigned round robin"
            )
    return lines


def this_host() -> str:
    return socket.gethostname()
