"""Which exchanges a run checks: ordered pairs of selected, available frameworks per converter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.interop.adapters import ADAPTERS, get_adapter
from pytest_gpucheck.interop.converters import (
    PROTOCOLS,
    Converter,
    library_converter,
    user_converters,
)

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter

from pytest_gpucheck.interop.matrix import CELL_PROPERTY

__all__ = ["CELL_PROPERTY", "Pair", "available_frameworks", "missing_host_importer",
           "pair_params"]


@dataclass(frozen=True)
class Pair:
    """One cell of the matrix: a converter between two backends."""

    converter: Converter

    @property
    def id(self) -> str:
        """``dlpack-torch-cpu->numpy`` (the backend names keep simulator routing working)."""
        return f"{self.converter.id}-{self.converter.producer}->{self.converter.consumer}"

    def cell(self) -> dict[str, str]:
        c = self.converter
        return {"protocol": c.id, "producer": c.producer, "consumer": c.consumer}

    def adapters(self, config: pytest.Config) -> tuple[Adapter, Adapter]:
        from pytest_gpucheck.selection import get_selection

        selection = get_selection(config)
        return (get_adapter(selection.backend(self.converter.producer)),
                get_adapter(selection.backend(self.converter.consumer)))


def available_frameworks(config: pytest.Config) -> list[str]:
    """Selected, available backends that have arrays of their own, in report order."""
    from pytest_gpucheck.selection import get_selection

    return [name for name in get_selection(config).available_names if name in ADAPTERS]


def pair_params(
    config: pytest.Config, protocols: tuple[str, ...] = tuple(PROTOCOLS)
) -> list[Any]:
    """``pytest.param`` per converter and ordered pair; pairs across devices are skipped."""
    from pytest_gpucheck.selection import get_selection

    selection = get_selection(config)
    names = available_frameworks(config)
    converters = [library_converter(protocol, p, c)
                  for protocol in protocols for p in names for c in names]
    converters += [c for c in user_converters() if c.producer in names and c.consumer in names]
    params = []
    for converter in converters:
        pair = Pair(converter)
        producer = get_adapter(selection.backend(converter.producer))
        consumer = get_adapter(selection.backend(converter.consumer))
        marks = []
        if producer.device != consumer.device:
            marks.append(pytest.mark.skip(
                reason=f"not available: different devices ({converter.producer} on "
                f"{producer.device}, {converter.consumer} on {consumer.device})"))
        else:
            missing = missing_host_importer(converter, consumer)
            if missing is not None:
                marks.append(pytest.mark.skip(reason=f"not available: {missing}"))
        params.append(pytest.param(pair, id=pair.id, marks=marks))
    return params


def missing_host_importer(converter: Converter, consumer: Adapter) -> str | None:
    """Why a host consumer cannot import with ``converter`` (None: it can, or the consumer
    is not on the host).

    Decided at collection, so the item is a skip that never reaches a worker process
    (``--gpu-isolate``) and costs no round trip there.  Only for host consumers: building
    their importer touches no device, while a GPU consumer's may create a stream, and the
    parent of isolated workers never touches the GPU; a GPU consumer's is built when the
    test runs, as every producer's missing attribute is found on a live array.
    """
    from pytest_gpucheck.backends.adapter_base import NotAvailable

    if consumer.device != "cpu":
        return None
    try:
        converter.build(consumer)
    except NotAvailable as exc:
        return str(exc)
    return None
