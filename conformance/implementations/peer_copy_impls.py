"""The peer-copy check of the multi-device suite (``test_peer_copy``): an array copied
from one GPU to another the framework's documented way lands on the target with the
same values, and leaves the source as it was.

Each framework's copy lives in its backend folder (``Backend.peer_copy``:
``backends/cupy/peer_copy.py``, ``backends/torch/peer_copy.py``), so tests drive the
same check with a fake two-device module.  Never run on a GPU in this project's CI:
fewer than two GPUs skip the check with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pytest_gpucheck.backends.base import PeerCopy


@dataclass
class PeerCopyResult:
    """What one copy from ``source`` to ``target`` showed."""

    source: int
    target: int
    peer_access: bool
    problems: list[str] = field(default_factory=list)


def check_peer_copy(ops: PeerCopy, host: np.ndarray, source: int = 0,
                    target: int = 1) -> PeerCopyResult:
    """Copy ``host``, put on device ``source``, to device ``target`` with ``ops.copy_to``;
    every problem found is one line: the copy's device, its values, the source's device
    and values (also after the copy is overwritten, so a copy sharing the source's
    memory is caught)."""
    what = f"{host.dtype}{list(host.shape)}"
    original = ops.put(host, source)
    result = PeerCopyResult(source, target, ops.can_access_peer(source, target))
    problems = result.problems
    copied = ops.copy_to(original, target)
    where = ops.device_of(copied)
    if where != target:
        problems.append(f"the copy of {what} is on device {where}, but should be on device "
                        f"{target}")
    if copied is original:
        problems.append(f"the copy of {what} is the source array itself")
    values = ops.to_host(copied)
    if values.dtype != host.dtype or values.shape != host.shape:
        problems.append(f"the copy of {what} is {values.dtype}{list(values.shape)}")
    elif not np.array_equal(values, host):
        wrong = int(np.count_nonzero(values != host))
        problems.append(f"the copy of {what} differs from the source in {wrong} of "
                        f"{host.size} elements")
    ops.overwrite(copied)
    if ops.device_of(original) != source:
        problems.append(f"the source of {what} moved to device {ops.device_of(original)}")
    if not np.array_equal(ops.to_host(original), host):
        problems.append(f"the source of {what} on device {source} changed (after the copy "
                        "was overwritten: the two share memory)")
    return result


#: What the check copies: distinct values (a shifted or partial copy shows), non-square,
#: a float and an integer dtype.
SAMPLES = (np.arange(1, 1 + 5 * 7, dtype=np.float32).reshape(5, 7),
           np.arange(-500, 500, 3, dtype=np.int64))

__all__ = ["SAMPLES", "PeerCopyResult", "check_peer_copy"]
