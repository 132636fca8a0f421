"""pytest-gpucheck: is your GPU kernel right on every framework you ship?

The public API, importable without importing any array framework:

- :func:`implements` / :func:`not_applicable`: register your own implementation
  of a bundled kernel (or say why a backend cannot express it); the bundled
  conformance suites then check it (``pytest --gpu-conformance``).
- :class:`LaunchConfig`: what kernels that take ``launch`` receive.
- :func:`this_process_device` (this xdist worker's or MPI rank's GPU) and
  :func:`apply_jax_memory_policy` (JAX allocates GPU memory on demand): the GPU
  pieces for a project that keeps its own ``xp`` parametrization.
- Assertion helpers with derived tolerances and reproducers, and the interop
  helpers, are loaded on first use (see ``__all__``).

Fixtures (``gpu_backend``, ``xp``, ``gpu_device``, ``mpi_comm``,
``gpu_benchmark``...) and markers come with the pytest plugin, which
installing the package activates.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public names and the modules that define them, imported on first use: the
#: pytest plugin lives in this package, so importing it must stay cheap.
_LAZY = {
    "Implementation": "pytest_gpucheck.registry",
    "implementations": "pytest_gpucheck.registry",
    "implements": "pytest_gpucheck.registry",
    "not_applicable": "pytest_gpucheck.registry",
    "LaunchConfig": "pytest_gpucheck.kernel_launch",
    "CheckContext": "pytest_gpucheck.assertions",
    "assert_matches_reference": "pytest_gpucheck.assertions",
    "assert_dtype": "pytest_gpucheck.assertions",
    "assert_shape": "pytest_gpucheck.assertions",
    "assert_unchanged": "pytest_gpucheck.assertions",
    "assert_guards_intact": "pytest_gpucheck.assertions",
    "GuardedBuffer": "pytest_gpucheck.guards",
    "assert_shares_memory": "pytest_gpucheck.interop",
    "converter": "pytest_gpucheck.interop",
    # The GPU pieces, for a project that keeps its own parametrization (its own `xp`).
    "this_process_device": "pytest_gpucheck.devices",
    "apply_jax_memory_policy": "pytest_gpucheck.child_env",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_gpucheck' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["__version__", *_LAZY]
