"""What the suite measures about one array (kept under ``interop`` for its importers).

The facts are part of the exchange protocol each framework's adapter fills in,
so they live with the backends: :mod:`pytest_gpucheck.backends.array_facts`.
"""

from __future__ import annotations

from ..backends.array_facts import ArrayFacts, c_strides, is_compact, significant_strides

__all__ = ["ArrayFacts", "c_strides", "is_compact", "significant_strides"]
