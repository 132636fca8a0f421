"""Peer copies between two GPUs of one process with PyTorch, the way PyTorch documents
them: ``tensor.to(f"cuda:{dst}")``; ``torch.cuda.can_device_access_peer`` says whether
the copy can go directly between the GPUs.

The adapter takes the torch module (imported on first use when not given), so tests
drive the same code with a fake two-device module.  Never run on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class TorchPeerCopy:
    """Peer copies with PyTorch (what :meth:`TorchCudaBackend.peer_copy` returns)."""

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
