"""Zero-copy interop checks: DLPack and the CUDA Array Interface across frameworks.

Public API: :func:`assert_shares_memory`, :func:`converter` /
:func:`register_converter` for users' own converters, and the pieces the
suite is built from (cases, adapters, the classifier, the documented table).
Importing this package imports no array framework.
"""

from __future__ import annotations

from typing import Any

from pytest_gpucheck import lazy_face

#: Public names and their modules, imported on first use: the pytest plugin
#: imports this package, and loading the plugin must stay cheap (and must not
#: import NumPy, which assert_shares_memory needs).
_PUBLIC = {
    "InteropMismatch": "outcomes",
    "Outcome": "outcomes",
    "assert_shares_memory": "shares_memory",
    "converter": "converters",
    "register_converter": "converters",
    "unregister_converter": "converters",
    "user_converters": "converters",
}


_face = lazy_face(__name__, _PUBLIC)


def __getattr__(name: str) -> Any:
    return _face(name)


__all__ = [
    "InteropMismatch",
    "Outcome",
    "assert_shares_memory",
    "converter",
    "register_converter",
    "unregister_converter",
    "user_converters",
]
