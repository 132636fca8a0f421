"""The dtypes the interop suite exchanges, by name, including ``bfloat16``.

NumPy has no ``bfloat16``; the ``ml_dtypes`` package (installed with JAX)
provides one that NumPy arrays can hold.  Where it is missing, ``bfloat16``
cases are skipped with that reason rather than silently dropped.
"""

from __future__ import annotations

import numpy as np

#: Every dtype the suite draws, in report order.
DTYPE_NAMES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "bfloat16",
)


class DtypeUnavailable(LookupError):
    """The dtype cannot be represented in this environment (reason in the message)."""


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype for ``name``; ``bfloat16`` comes from ``ml_dtypes``."""
    if name != "bfloat16":
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError as exc:
        raise DtypeUnavailable(
            "bfloat16 needs the ml_dtypes package (pip install ml_dtypes)"
        ) from exc
    return np.dtype(ml_dtypes.bfloat16)


def dtype_name(dtype: np.dtype) -> str:
    """The suite's name for a NumPy dtype (``bfloat16`` for the ml_dtypes one)."""
    return str(np.dtype(dtype).name)
