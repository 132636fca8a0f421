"""The producer side of the CUDA Array Interface: is ``__cuda_array_interface__`` true?

The dictionary must describe the array it belongs to: ``shape``, ``typestr``
(the dtype, byte order included), ``data`` as (pointer, read-only flag),
``strides`` in bytes or None only for C-contiguous data, and ``version``.
It is judged by the rules of the version it declares:

- **v2** (PyTorch and JAX export it): no ``stream`` key; the consumer cannot
  know which stream wrote the data, so the producer must have synchronized.
  A stream handle under v2 is reported: a v2 consumer ignores it, so the
  producer should declare version 3.
- **v3**: an optional ``stream``, None or a stream handle, never 0 (ambiguous
  between the legacy and per-thread default streams, so v3 forbids it).

Sources: numba-cuda's "CUDA Array Interface (Version 3)" page and its v2
predecessor (numba 0.46 documentation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.array_facts import c_strides, significant_strides

if TYPE_CHECKING:
    from pytest_gpucheck.backends.array_facts import ArrayFacts

REQUIRED_KEYS = ("shape", "typestr", "data", "version")
#: The versions whose rules are checked here (v0 and v1 are long obsolete).
KNOWN_VERSIONS = (2, 3)


def cai_problems(interface: dict[str, Any], facts: ArrayFacts) -> list[str]:
    """Every way ``interface`` misdescribes the array whose measured facts are ``facts``."""
    problems = [f"missing key {key!r}" for key in REQUIRED_KEYS if key not in interface]
    if problems:
        return problems
    version = interface["version"]
    if version not in KNOWN_VERSIONS:
        problems.append(f"version is {version!r}, not one of the CUDA Array Interface "
                        f"versions {KNOWN_VERSIONS} this check knows")
    if tuple(interface["shape"]) != facts.shape:
        problems.append(f"shape {tuple(interface['shape'])} != the array's {facts.shape}")
    if not typestr_names(str(interface["typestr"]), facts.dtype):
        problems.append(f"typestr {interface['typestr']!r} "
                        f"({np.dtype(interface['typestr']).name}) is not "
                        f"{facts.dtype.str!r} ({facts.dtype.name})")
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
    problems += _stream_problems(interface, version)
    return problems


def typestr_names(typestr: str, dtype: np.dtype) -> bool:
    """True when ``typestr`` is what a producer of ``dtype`` can truthfully write.

    A typestr names NumPy's built-in dtypes only.  An extension dtype with no
    fields (ml_dtypes' bfloat16) has no name of its own there: its only
    typestr is the raw ``'<V2'`` of its size (PyTorch writes it for bfloat16,
    ``torch/_tensor.py``), so that is accepted for it, and only for it.
    """
    if np.dtype(typestr) == dtype:
        return True
    plain_void = type(np.dtype("V1"))  # NumPy's own unstructured void
    extension = dtype.kind == "V" and dtype.fields is None and type(dtype) is not plain_void
    return extension and typestr.lstrip("<>|=") == f"V{dtype.itemsize}"


def _stream_problems(interface: dict[str, Any], version: Any) -> list[str]:
    """The ``stream`` entry under the rules of the declared version."""
    stream = interface.get("stream")
    if stream is None:
        return []  # optional in v3 (None: no synchronization needed); v2 has no stream
    if version == 2:
        return [f"stream {stream!r} given under version 2, which has no stream key "
                "(a v2 consumer ignores it; declare version 3)"]
    if stream == 0:
        return ["stream is 0, which CAI v3 forbids (use 1 or 2, or None)"]
    if stream is not None and not isinstance(stream, int):
        return [f"stream is a {type(stream).__name__}, not None or an int handle"]
    return []
