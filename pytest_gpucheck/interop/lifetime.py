"""Does the consumer keep the producer's memory alive?

A zero-copy consumer must hold a reference that keeps the producer's buffer
allocated (the DLPack deleter, the CAI owner).  The check drops every
reference to the producer, collects garbage, then allocates and fills new
arrays of the same size: a consumer pointing at freed memory now reads the
new arrays' values, because allocators hand freed blocks out again.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.interop.classify import hand_over, produce_for, same_bytes
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.interop.cases import Case
    from pytest_gpucheck.interop.converters import Converter

#: New same-size arrays allocated after the producer is dropped.
REUSE_ATTEMPTS = 8


def complement(host: np.ndarray) -> np.ndarray:
    """An array of the same shape whose every element differs from ``host``'s."""
    if host.dtype == np.bool_:
        return np.asarray(np.logical_not(host)).copy(order="K")
    raw = np.ascontiguousarray(host).reshape(-1).view(np.uint8) ^ np.uint8(0xFF)
    return raw.view(host.dtype).reshape(host.shape).copy(order="K")


def check_lifetime(
    case: Case, producer: Adapter, consumer: Adapter, converter: Converter
) -> Exchange:
    """Hand ``case`` over, drop the producer, reuse its memory, and re-read the consumer.

    Returns the exchange; a consumer whose values changed is ``WRONG``.
    """
    return check_lifetimes([case], producer, consumer, converter)[0]


def check_lifetimes(
    cases: list[Case], producer: Adapter, consumer: Adapter, converter: Converter
) -> list[Exchange]:
    """:func:`check_lifetime` for several cases with one garbage collection.

    A full collection costs a quarter of a second once PyTorch and JAX are
    loaded, so the cases share it.
    """
    convert = converter.build(consumer)
    results: list[Exchange] = []
    shared: list[tuple[Case, Exchange, Any]] = []
    for case in cases:
        # The same per-case check as exchange(): a case the producer cannot
        # export this way is not available, not a refusal or a copy.
        source, unavailable = produce_for(case, producer, converter)
        if unavailable is not None:
            results.append(unavailable)
            continue
        result, target = hand_over(case, source, producer, consumer, convert, converter)
        del source  # the consumer's array is now the only way to the memory
        results.append(result)
        if result.outcome is Outcome.ZERO_COPY:
            shared.append((case, result, target))
    gc.collect()
    # Keep the new arrays alive until every consumer has been read.
    reuse: list[Any] = [
        producer.upload(complement(case.base_host()))
        for case, _, _ in shared
        for _ in range(REUSE_ATTEMPTS)
    ]
    producer.synchronize()
    for case, result, target in shared:
        if not same_bytes(consumer.to_host(target), case.host()):
            result.outcome = Outcome.WRONG
            result.problems.append(
                "the consumer's values changed after the producer was dropped and its "
                "memory reused: the consumer does not keep the producer alive"
            )
    del reuse
    return results
