"""The adapter protocol of the interop suite (kept here for its importers).

Each framework implements it beside its backend, so the protocol lives with the
backends: :mod:`pytest_gpucheck.backends.adapter_base`.
"""

from __future__ import annotations

from ...backends.adapter_base import Adapter, NotAvailable, ReadOnly

__all__ = ["Adapter", "NotAvailable", "ReadOnly"]
