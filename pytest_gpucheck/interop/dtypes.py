"""The dtypes the interop suite exchanges (kept under ``interop`` for its importers).

Adapters use them too, so they live with the backends:
:mod:`pytest_gpucheck.backends.dtypes`.
"""

from __future__ import annotations

from ..backends.dtypes import DTYPE_NAMES, DtypeUnavailable, dtype_name, numpy_dtype

__all__ = ["DTYPE_NAMES", "DtypeUnavailable", "dtype_name", "numpy_dtype"]
