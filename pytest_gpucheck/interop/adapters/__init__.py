"""Interop adapters by backend name, imported lazily (no framework at import time)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .base import Adapter, NotAvailable

if TYPE_CHECKING:
    from ...backends.base import Backend

#: Backend name -> "module:class" of its adapter, in report order.
ADAPTERS: dict[str, str] = {
    "numpy": "numpy_adapter:NumpyAdapter",
    "numba-cudasim": "numba_adapter:NumbaCudaAdapter",
    "jax-cpu": "jax_adapter:JaxAdapter",
    "torch-cpu": "torch_adapter:TorchAdapter",
    "numba-cuda": "numba_adapter:NumbaCudaAdapter",
    "cupy": "cupy_adapter:CupyAdapter",
    "jax-gpu": "jax_adapter:JaxAdapter",
    "cuda-python": "cuda_core_adapter:CudaCoreAdapter",
    "torch-cuda": "torch_adapter:TorchAdapter",
}

#: Backends without an array type of their own, and why they have no cells.
NO_ADAPTER: dict[str, str] = {
    "numba-cpu": "@njit works on NumPy arrays; its exchanges are NumPy's",
}

_adapters: dict[tuple[str, int], Adapter] = {}


def get_adapter(backend: Backend) -> Adapter:
    """The adapter of ``backend`` (one per backend and device)."""
    key = (backend.name, backend.device_index)
    if key not in _adapters:
        module_name, class_name = ADAPTERS[backend.name].split(":")
        module = importlib.import_module(f"{__name__}.{module_name}")
        _adapters[key] = getattr(module, class_name)(backend)
    return _adapters[key]


__all__ = ["ADAPTERS", "NO_ADAPTER", "Adapter", "NotAvailable", "get_adapter"]
