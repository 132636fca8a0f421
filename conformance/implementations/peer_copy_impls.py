"""Peer copies between two GPUs of one process, the way each framework documents them,
and the check the multi-device suite applies to them (``test_peer_copy``).

* CuPy: ``cupy.asarray(a)`` under ``with cupy.cuda.Device(dst)``.  For an array on
  another device CuPy copies it to the current one (``_array_from_cupy_ndarray`` calls
  ``ndarray.copy``, which "makes a copy of a given array in the current device");
  on the array's own device it returns the array itself, so the ``with`` is the
  copy.  ``cupy.cuda.runtime.deviceCanAccessPeer`` says whether the copy can go
  directly between the GPUs.  CuPy refuses to copy a non-contiguous array between
  devices (``NotImplementedError``), so the check copies contiguous arrays.
* PyTorch: ``tensor.to(f"cuda:{dst}")``; ``torch.cuda.can_device_access_peer``.

Each adapter takes the framework module (imported on first use when not given), so
the tests drive the same code with a fake two-device module.  Never run on a GPU in
this project's CI: fewer than two GPUs skip the check with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


class CupyPeerCopy:
    """Peer copies with CuPy."""

    name = "cupy"

    def __init__(self, cupy: Any = None) -> None:
        self._cupy = cupy

    @property
    def cupy(self) -> Any:
        if self._cupy is None:
            import cupy

            self._cupy = cupy
        return self._cupy

    def device_count(self) -> int:
        return int(self.cupy.cuda.runtime.getDeviceCount())

    def can_access_peer(self, device: int, peer: int) -> bool:
        return bool(self.cupy.cuda.runtime.deviceCanAccessPeer(device, peer))

    def put(self, host: np.ndarray, device: int) -> Any:
        with self.cupy.cuda.Device(device):
            return self.cupy.asarray(host)

    def copy_to(self, array: Any, device: int) -> Any:
        with self.cupy.cuda.Device(device):
            return self.cupy.asarray(array)

    def device_of(self, array: Any) -> int:
        return int(array.device.id)

    def overwrite(self, array: Any) -> None:
        with self.cupy.cuda.Device(self.device_of(array)):
            array.fill(0)

    def to_host(self, array: Any) -> np.ndarray:
        with self.cupy.cuda.Device(self.device_of(array)):
            return np.asarray(self.cupy.asnumpy(array))


class TorchPeerCopy:
    """Peer copies with PyTorch."""

    name = "torch-cuda"

    def __init__(self, torch: Any = None) -> None:
        self._torch = torch

    @property
    def torch(self) -> Any:
        if self._torch is None:
            import torch

            self._torch = torch
        return self._torch

    def device_count(self) -> int:
        return int(self.torch.cuda.device_count())

    def can_access_peer(self, device: int, peer: int) -> bool:
        return bool(self.torch.cuda.can_device_access_peer(device, peer))

    def put(self, host: np.ndarray, device: int) -> Any:
        return self.torch.as_tensor(host, device=f"cuda:{device}")

    def copy_to(self, array: Any, device: int) -> Any:
        return array.to(f"cuda:{device}")

    def device_of(self, array: Any) -> int:
        where = array.device
        return int(where.index) if where.type == "cuda" and where.index is not None else -1

    def overwrite(self, array: Any) -> None:
        array.zero_()

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array.cpu().numpy())


#: Backend -> its peer-copy adapter class.
PEER_COPY = {"cupy": CupyPeerCopy, "torch-cuda": TorchPeerCopy}


@dataclass
class PeerCopyResult:
    """What one copy from ``source`` to ``target`` showed."""

    source: int
    target: int
    peer_access: bool
    problems: list[str] = field(default_factory=list)


def check_peer_copy(ops: Any, host: np.ndarray, source: int = 0,
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

__all__ = ["PEER_COPY", "SAMPLES", "CupyPeerCopy", "PeerCopyResult", "TorchPeerCopy",
           "check_peer_copy"]
