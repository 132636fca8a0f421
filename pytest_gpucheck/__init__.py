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
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"

#: Public names and the modules that define them (under this package), imported on
#: first use: the pytest plugin lives in this package, so importing it must stay cheap.
_LAZY = {
    "Implementation": "registry",
    "implementations": "registry",
    "implements": "registry",
    "not_applicable": "registry",
    "LaunchConfig": "checking.kernel_launch",
    "CheckContext": "checking.assertions",
    "assert_matches_reference": "checking.assertions",
    "assert_dtype": "checking.assertions",
    "assert_shape": "checking.assertions",
    "assert_unchanged": "checking.assertions",
    "assert_guards_intact": "checking.assertions",
    "GuardedBuffer": "checking.guards",
    "assert_shares_memory": "interop",
    "converter": "interop",
    # The GPU pieces, for a project that keeps its own parametrization (its own `xp`).
    "this_process_device": "backends.devices",
    "apply_jax_memory_policy": "environment",
}


def lazy_face(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a package whose public names are imported on first
    use: ``names`` maps each name to its module, relative to ``package``.  This package,
    ``interop`` and ``processes`` use it, so that loading the plugin stays cheap."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


_face = lazy_face(__name__, _LAZY)


def __getattr__(name: str) -> Any:
    return _face(name)


__all__ = ["__version__", *_LAZY]
