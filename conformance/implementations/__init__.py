"""The bundled implementations of every kernel, registered on import.

Importing this package imports each module below; each one registers its
implementations with :func:`pytest_gpucheck.registry.implements`
(``origin="bundled"``) and records with
:func:`pytest_gpucheck.registry.not_applicable` every kernel its framework
cannot express, with the reason.  No module imports its framework at import
time: kernels are built (and compiled) by cached factories on first call, so
registering everything costs no more than importing plain Python.
"""

from __future__ import annotations

import importlib

#: One module per framework style, imported in this order.  Add a new
#: framework's bundled implementations by appending its module here.
MODULES: tuple[str, ...] = (
    "numpy_impls",
    "numba_cpu_impls",
    "numba_cuda_impls",
    # The CuPy, JAX, PyTorch and cuda-python implementations:
    "cupy_impls",
    "jax_impls",
    "torch_impls",
    "cuda_python_impls",
    # Families added later, one module each:
    "ufunc_impls",
    "transform_impls",
    "multi_device_impls",
    "grid_sync_impls",
    "cupy_fuse_impls",
    "array_api_strict_impls",
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["MODULES"]
