"""Zero-copy interop checks: DLPack and the CUDA Array Interface across frameworks.

Public API: :func:`assert_shares_memory`, :func:`converter` /
:func:`register_converter` for users' own converters, and the pieces the
suite is built from (cases, adapters, the classifier, the documented table).
Importing this package imports no array framework.
"""

from __future__ import annotations

from typing import Any

from .converters import converter, register_converter, unregister_converter, user_converters
from .outcomes import InteropMismatch, Outcome


def __getattr__(name: str) -> Any:
    # assert_shares_memory needs NumPy: import it on first use, so that loading the
    # plugin (which imports this package) imports no array library.
    if name == "assert_shares_memory":
        from .shares_memory import assert_shares_memory

        return assert_shares_memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "InteropMismatch",
    "Outcome",
    "assert_shares_memory",
    "converter",
    "register_converter",
    "unregister_converter",
    "user_converters",
]
