"""Peer copies between two GPUs of one process with CuPy, the way CuPy documents them.

``cupy.asarray(a)`` under ``with cupy.cuda.Device(dst)``: for an array on another
device CuPy copies it to the current one (``_array_from_cupy_ndarray`` calls
``ndarray.copy``, which "makes a copy of a given array in the current device"); on
the array's own device it returns the array itself, so the ``with`` is the copy.
``cupy.cuda.runtime.deviceCanAccessPeer`` says whether the copy can go directly
between the GPUs.  CuPy refuses to copy a non-contiguous array between devices
(``NotImplementedError``), so the check copies contiguous arrays.

The adapter takes the CuPy module (imported on first use when not given), so tests
drive the same code with a fake two-device module.  Never run on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class CupyPeerCopy:
    """Peer copies with CuPy (what :meth:`CupyBackend.peer_copy` returns)."""

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
