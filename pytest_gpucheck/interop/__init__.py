"""Zero-copy interop checks: DLPack and the CUDA Array Interface across frameworks.

Public API: :func:`assert_shares_memory`, :func:`converter` /
:func:`register_converter` for users' own converters, and the pieces the
suite is built from (cases, adapters, the classifier, the documented table).
Importing this package imports no array framework.
"""

from __future__ import annotations

from .converters import converter, register_converter, unregister_converter, user_converters
from .outcomes import InteropMismatch, Outcome
from .shares_memory import assert_shares_memory

__all__ = [
    "InteropMismatch",
    "Outcome",
    "assert_shares_memory",
    "converter",
    "register_converter",
    "unregister_converter",
    "user_converters",
]
