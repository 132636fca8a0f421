"""The backend registry: names, groups and lazily imported backend classes.

Only this table is read when the plugin loads; a backend's module (and with it
NumPy) is imported when the backend is first used, and its framework only when
it is probed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Backend

#: Backend name -> "module:class", in the order reports list them.
BACKENDS: dict[str, str] = {
    "numpy": "numpy_backend:NumpyBackend",
    "numba-cpu": "numba_backends:NumbaCpuBackend",
    "numba-cudasim": "numba_backends:NumbaCudasimBackend",
    "jax-cpu": "jax_backends:JaxCpuBackend",
    "torch-cpu": "torch_backends:TorchCpuBackend",
    "numba-cuda": "numba_backends:NumbaCudaBackend",
    "cupy": "cupy_backend:CupyBackend",
    "jax-gpu": "jax_backends:JaxGpuBackend",
    "cuda-python": "cuda_python_backend:CudaPythonBackend",
    "torch-cuda": "torch_backends:TorchCudaBackend",
}

CPU_BACKENDS: tuple[str, ...] = ("numpy", "numba-cpu", "numba-cudasim", "jax-cpu", "torch-cpu")
GPU_BACKENDS: tuple[str, ...] = ("numba-cuda", "cupy", "jax-gpu", "cuda-python", "torch-cuda")

GROUPS: dict[str, tuple[str, ...]] = {
    "all": CPU_BACKENDS + GPU_BACKENDS,
    "cpu": CPU_BACKENDS,
    "gpu": GPU_BACKENDS,
}


def backend_class(name: str) -> type[Backend]:
    """The class implementing backend ``name`` (imports its module, not its framework)."""
    module_name, class_name = BACKENDS[name].split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, class_name)  # type: ignore[no-any-return]


_instances: dict[tuple[str, int], Backend] = {}


def get_backend(name: str, device_index: int = 0) -> Backend:
    """The process-wide backend object for ``name`` on ``device_index`` (probed once)."""
    key = (name, device_index)
    if key not in _instances:
        _instances[key] = backend_class(name)(device_index)
    return _instances[key]


__all__ = ["BACKENDS", "CPU_BACKENDS", "GPU_BACKENDS", "GROUPS", "backend_class", "get_backend"]
