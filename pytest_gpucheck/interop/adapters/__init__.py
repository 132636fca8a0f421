"""Interop adapters by backend (no framework imported until one is used).

Each framework's adapter lives beside its backend, in
``pytest_gpucheck/backends/<framework>/adapter.py``, and the backend returns it
from :meth:`~pytest_gpucheck.backends.base.Backend.interop_adapter`; this
package keeps one adapter per backend and device (the protocol is
:mod:`pytest_gpucheck.backends.adapter_base`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_gpucheck.backends import INTEROP_BACKENDS, NO_INTEROP_ADAPTER
from pytest_gpucheck.backends.adapter_base import Adapter

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend

#: Backends with an interop adapter, in report order.
ADAPTERS: tuple[str, ...] = INTEROP_BACKENDS

#: Backends without an array type of their own, and why they have no cells.
NO_ADAPTER: dict[str, str] = NO_INTEROP_ADAPTER

_adapters: dict[tuple[str, int], Adapter] = {}


def get_adapter(backend: Backend) -> Adapter:
    """The adapter of ``backend`` (one per backend and device)."""
    key = (backend.name, backend.device_index)
    if key not in _adapters:
        _adapters[key] = backend.interop_adapter()
    return _adapters[key]


__all__ = ["ADAPTERS", "NO_ADAPTER", "get_adapter"]
