"""Stream ordering on a GPU: a write still queued on the producer's stream must be
visible to a consumer that imports through DLPack and then works on its own stream.

The producer keeps a side stream busy (a spin kernel), queues a fill behind it
and, with that stream still current, hands the array over: DLPack's
``__dlpack__(stream=consumer_stream)`` obliges it to make the consumer's stream
wait.  The consumer then copies the array *on its own stream*; only after that
copy is queued is the device synchronized and the copy read.  If the producer
skipped the wait, the copy ran during the spin and holds the old values.

GPU only; written against the frameworks' documented stream APIs, and it has
not run in this project's CI (no GPU there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import NotAvailable

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter

#: Elements in the handed-over array, and spin-kernel cycles before the fill lands.
ELEMENTS = 1 << 20
SPIN_CYCLES = 200_000_000  # ~0.1 s at 2 GHz: far longer than launching the copy


def check_stream_order(producer: Adapter, consumer: Adapter,
                       importer: Callable[[Any], Any]) -> list[str]:
    """Problems found (empty when the consumer saw the producer's queued write).

    The producer's :meth:`~pytest_gpucheck.backends.adapter_base.Adapter.pending_fill`
    queues the slow write; the consumer's
    :meth:`~pytest_gpucheck.backends.adapter_base.Adapter.stream_copy` reads the import
    on its own stream (both live in each framework's adapter).
    """
    if not producer.queues_pending_fill:
        raise NotAvailable(f"{producer.name}: no way to queue a slow write on a side stream")
    if not consumer.has_stream_copy:
        raise NotAvailable(f"{consumer.name}: no stream-ordered copy to read the import with")
    value = 7.0
    with producer.pending_fill(value, ELEMENTS, SPIN_CYCLES) as pending:
        imported = importer(pending)
        snapshot = consumer.stream_copy(imported)
    producer.synchronize()
    consumer.synchronize()
    seen = consumer.to_host(snapshot)
    stale = int(np.count_nonzero(seen != value))
    if stale:
        return [f"{stale} of {seen.size} elements read by the consumer predate the producer's "
                "queued write: the hand-over did not order the consumer's stream after the "
                "producer's"]
    return []
