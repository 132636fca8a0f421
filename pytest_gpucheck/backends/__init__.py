"""The backend registry: names, groups and lazily imported backend classes.

Each framework has one folder here, ``backends/<framework>/``, holding
everything specific to it: ``backend.py`` (probe, array namespace, transfers,
synchronisation, event timer, device copy, runtime version, MPI array
operations) and ``adapter.py`` (DLPack / CUDA Array Interface adapter and
stream hooks of the interop suite).  The features call the protocol declared
in :mod:`.base`; registering a framework is one row in :data:`BACKENDS`.

Only this table is read when the plugin loads; a backend's module (and with it
NumPy) is imported when the backend is first used, and its framework only when
it is probed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend

#: Backend name -> "module:class", in the order reports list them.
BACKENDS: dict[str, str] = {
    "numpy": "numpy.backend:NumpyBackend",
    "numba-cpu": "numba.backend:NumbaCpuBackend",
    "numba-cudasim": "numba.backend:NumbaCudasimBackend",
    "jax-cpu": "jax.backend:JaxCpuBackend",
    "torch-cpu": "torch.backend:TorchCpuBackend",
    "array-api-strict": "array_api_strict.backend:ArrayApiStrictBackend",
    "numba-cuda": "numba.backend:NumbaCudaBackend",
    "cupy": "cupy.backend:CupyBackend",
    "jax-gpu": "jax.backend:JaxGpuBackend",
    "cuda-python": "cuda_python.backend:CudaPythonBackend",
    "torch-cuda": "torch.backend:TorchCudaBackend",
}

#: Backends without an array type of their own, and why the interop suite has no
#: cells for them (their :meth:`~.base.Backend.interop_adapter` raises).
NO_INTEROP_ADAPTER: dict[str, str] = {
    "numba-cpu": "@njit works on NumPy arrays; its exchanges are NumPy's",
}

#: Backends with an interop adapter, in report order (read without importing them).
INTEROP_BACKENDS: tuple[str, ...] = tuple(n for n in BACKENDS if n not in NO_INTEROP_ADAPTER)

CPU_BACKENDS: tuple[str, ...] = ("numpy", "numba-cpu", "numba-cudasim", "jax-cpu", "torch-cpu",
                                  "array-api-strict")
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


__all__ = [
    "BACKENDS",
    "CPU_BACKENDS",
    "GPU_BACKENDS",
    "GROUPS",
    "INTEROP_BACKENDS",
    "NO_INTEROP_ADAPTER",
    "backend_class",
    "get_backend",
]
