"""The producer side of the CUDA Array Interface (v3): is ``__cuda_array_interface__`` true?

The dictionary must describe the array it belongs to: ``shape``, ``typestr``
(the dtype, byte order included), ``data`` as (pointer, read-only flag),
``strides`` in bytes or None only for C-contiguous data, ``version`` 3, and a
``stream`` that is None or a stream handle — never 0, which v3 forbids because
it is ambiguous between the legacy and per-thread default streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .facts import c_strides, significant_strides

if TYPE_CHECKING:
    from .facts import ArrayFacts

REQUIRED_KEYS = ("shape", "typestr", "data", "version")


def cai_problems(interface: dict[str, Any], facts: ArrayFacts) -> list[str]:
    """Every way ``interface`` misdescribes the array whose measured facts are ``facts``."""
    problems = [f"missing key {key!r}" for key in REQUIRED_KEYS if key not in interface]
    if problems:
        return problems
    if interface["version"] != 3:
        problems.append(f"version is {interface['version']!r}, not 3")
    if tuple(interface["shape"]) != facts.shape:
        problems.append(f"shape {tuple(interface['shape'])} != the array's {facts.shape}")
    if np.dtype(interface["typestr"]) != facts.dtype:
        problems.append(f"typestr {interface['typestr']!r} is not {facts.dtype.str!r} "
                        f"({facts.dtype.name})")
    pointer, readonly = interface["data"]
    if facts.size and int(pointer) != facts.pointer:
        problems.append(f"data pointer {int(pointer):#x} != the array's {facts.pointer:#x}")
    if bool(readonly) != facts.readonly:
        problems.append(f"read-only flag {bool(readonly)} != the array's {facts.readonly}")
    strides = interface.get("strides")
    described = tuple(strides) if strides is not None else c_strides(facts.shape,
                                                                     facts.dtype.itemsize)
    if facts.size and significant_strides(facts.shape, described) != significant_strides(
        facts.shape, facts.strides
    ):
        what = "strides None (C-contiguous)" if strides is None else f"strides {described}"
        problems.append(f"{what} != the array's {facts.strides}")
    if interface.get("stream") == 0:
        problems.append("stream is 0, which CAI v3 forbids (use 1 or 2, or None)")
    return problems
