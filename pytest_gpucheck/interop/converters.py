"""Converters: a function handing an array from one framework to another.

The library converters are each framework's importer for one protocol
(``from_dlpack`` with ``copy=None``/``False``/``True``, or the CUDA Array
Interface).  Users register their own with :func:`converter` (or
:func:`register_converter`) in a ``conftest.py``; a user converter claims
to be zero-copy, and the same suite checks that claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pytest

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter

F = TypeVar("F", bound=Callable[..., Any])
#: What a converter promises: always zero-copy, zero-copy unless documented, or a copy.
Expectation = Literal["zero-copy", "may-copy", "copy"]

#: Library protocols: name -> (what it calls, what it promises).
PROTOCOLS: dict[str, tuple[str, Expectation]] = {
    "dlpack": ("consumer.from_dlpack(x)", "may-copy"),
    "dlpack-nocopy": ("consumer.from_dlpack(x, copy=False)", "zero-copy"),
    "dlpack-copy": ("consumer.from_dlpack(x, copy=True)", "copy"),
    "cai": ("consumer imports x.__cuda_array_interface__", "may-copy"),
}

#: The producer attributes each protocol needs (looked up on the live array).
PRODUCER_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "dlpack": ("__dlpack__", "__dlpack_device__"),
    "dlpack-nocopy": ("__dlpack__", "__dlpack_device__"),
    "dlpack-copy": ("__dlpack__", "__dlpack_device__"),
    "cai": ("__cuda_array_interface__",),
}

_DLPACK_COPY: dict[str, bool | None] = {"dlpack": None, "dlpack-nocopy": False, "dlpack-copy": True}


@dataclass(frozen=True)
class Converter:
    """A way to hand ``producer`` arrays to ``consumer`` under ``protocol``."""

    producer: str
    consumer: str
    protocol: str
    name: str
    origin: Literal["library", "user"]
    expectation: Expectation
    func: Callable[[Any], Any] | None = None  # user converters; library ones are built
    #: The dtypes the converter handles (None: every dtype of the suite).
    dtypes: tuple[str, ...] | None = None

    @property
    def id(self) -> str:
        """Test-id fragment: ``dlpack`` for a library protocol, ``user:NAME`` otherwise."""
        return self.protocol if self.origin == "library" else f"user:{self.name}"

    def build(self, consumer: Adapter) -> Callable[[Any], Any]:
        """The callable to run (raises ``NotAvailable`` when the consumer lacks the importer)."""
        if self.func is not None:
            return self.func
        if self.protocol == "cai":
            return consumer.cai_importer()
        return consumer.dlpack_importer(_DLPACK_COPY[self.protocol])

    def missing_producer_attribute(self, array: Any) -> str | None:
        """The protocol attribute ``array`` lacks (user converters need none)."""
        if self.origin == "user":
            return None
        for attribute in PRODUCER_ATTRIBUTES[self.protocol]:
            if not hasattr(array, attribute):
                return attribute
        return None


def library_converter(protocol: str, producer: str, consumer: str) -> Converter:
    """The library converter for ``protocol`` between two backends."""
    return Converter(producer, consumer, protocol, name=protocol, origin="library",
                     expectation=PROTOCOLS[protocol][1])


_user_converters: dict[str, Converter] = {}


def _check_backend(role: str, name: str) -> None:
    from pytest_gpucheck.interop.adapters import ADAPTERS, NO_ADAPTER

    if name in NO_ADAPTER:
        raise pytest.UsageError(f"converter {role}={name!r}: {NO_ADAPTER[name]}; use 'numpy'")
    if name not in ADAPTERS:
        raise pytest.UsageError(
            f"converter {role}={name!r} is not a backend with arrays; use one of: "
            + ", ".join(ADAPTERS)
        )


def register_converter(
    func: Callable[[Any], Any],
    *,
    producer: str,
    consumer: str,
    protocol: str = "custom",
    name: str | None = None,
    dtypes: tuple[str, ...] | None = None,
) -> Converter:
    """Register ``func(producer_array) -> consumer_array`` as a zero-copy converter.

    The interop suite then checks it like a library protocol, and requires
    zero-copy: a copy, lost strides, a changed dtype, a lost read-only flag
    or a consumer that outlives the producer's memory all fail.  ``dtypes``
    limits the cases to the dtype names the converter handles (see
    ``pytest_gpucheck.backends.dtypes.DTYPE_NAMES``); by default it gets all.
    """
    from pytest_gpucheck.backends.dtypes import DTYPE_NAMES

    _check_backend("producer", producer)
    _check_backend("consumer", consumer)
    if protocol in PROTOCOLS:
        raise pytest.UsageError(
            f"converter protocol={protocol!r} is a library protocol; name yours "
            "differently (e.g. protocol='custom')"
        )
    unknown = sorted(set(dtypes or ()) - set(DTYPE_NAMES))
    if unknown:
        raise pytest.UsageError(f"converter dtypes={unknown} are not suite dtypes; use names "
                                "from: " + ", ".join(DTYPE_NAMES))
    name = name or str(getattr(func, "__name__", "converter"))
    if name in _user_converters and _user_converters[name].func is not func:
        raise pytest.UsageError(f"a converter named {name!r} is already registered; "
                                "pass name= to tell them apart")
    registered = Converter(producer, consumer, protocol, name=name, origin="user",
                           expectation="zero-copy", func=func,
                           dtypes=tuple(dtypes) if dtypes else None)
    _user_converters[name] = registered
    return registered


def converter(
    *,
    producer: str,
    consumer: str,
    protocol: str = "custom",
    name: str | None = None,
    dtypes: tuple[str, ...] | None = None,
) -> Callable[[F], F]:
    """Decorator form of :func:`register_converter`.

    >>> import numpy as np
    >>> @converter(producer="numpy", consumer="numpy", name="doc_identity")
    ... def identity(array):
    ...     return array
    >>> [c.name for c in user_converters() if c.name == "doc_identity"]
    ['doc_identity']
    >>> unregister_converter("doc_identity")
    """

    def decorate(func: F) -> F:
        register_converter(func, producer=producer, consumer=consumer, protocol=protocol,
                           name=name, dtypes=dtypes)
        return func

    return decorate


def user_converters() -> list[Converter]:
    """Every registered user converter, in registration order."""
    return list(_user_converters.values())


def unregister_converter(name: str) -> None:
    """Forget the user converter ``name`` (a missing name is ignored)."""
    _user_converters.pop(name, None)


def snapshot() -> dict[str, Converter]:
    """The registry's content (the plugin restores it when a pytest session ends)."""
    return dict(_user_converters)


def restore(saved: dict[str, Converter]) -> None:
    """Put back a :func:`snapshot`."""
    _user_converters.clear()
    _user_converters.update(saved)
