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

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .adapters.base import NotAvailable

if TYPE_CHECKING:
    from .adapters.base import Adapter

#: Elements in the handed-over array, and spin-kernel cycles before the fill lands.
ELEMENTS = 1 << 20
SPIN_CYCLES = 200_000_000  # ~0.1 s at 2 GHz: far longer than launching the copy

_SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


@contextlib.contextmanager
def _torch_pending_fill(adapter: Adapter, value: float) -> Iterator[Any]:
    import torch

    device = torch.device(adapter.device)
    array = torch.zeros(ELEMENTS, dtype=torch.float32, device=device)
    torch.cuda.synchronize(device)
    side = torch.cuda.Stream(device=device)
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN_CYCLES)  # the spin kernel PyTorch's own stream tests use
        array.fill_(value)
        yield array  # the import happens while the side stream is current


@contextlib.contextmanager
def _cupy_pending_fill(adapter: Adapter, value: float) -> Iterator[Any]:
    import cupy  # type: ignore[import-not-found, unused-ignore]

    with cupy.cuda.Device(adapter.backend.device_index):
        array = cupy.zeros(ELEMENTS, dtype=cupy.float32)
        cupy.cuda.Device().synchronize()
        spin = cupy.RawKernel(_SPIN_SOURCE, "spin")
        side = cupy.cuda.Stream(non_blocking=True)
        with side:
            spin((1,), (1,), (np.int64(SPIN_CYCLES),))
            array.fill(value)
            yield array


PENDING_FILL: dict[str, Callable[[Adapter, float], contextlib.AbstractContextManager[Any]]] = {
    "torch-cuda": _torch_pending_fill,
    "cupy": _cupy_pending_fill,
}


def _snapshot(consumer: Adapter, array: Any) -> Any:
    """A copy of ``array`` queued on the consumer's current stream (not yet synchronized)."""
    if consumer.name == "torch-cuda":
        return array.clone()
    if consumer.name == "cupy":
        return array.copy()
    if consumer.name == "jax-gpu":
        import jax.numpy as jnp

        return jnp.array(array, copy=True)
    raise NotAvailable(f"{consumer.name}: no stream-ordered copy to read the import with")


def check_stream_order(producer: Adapter, consumer: Adapter,
                       importer: Callable[[Any], Any]) -> list[str]:
    """Problems found (empty when the consumer saw the producer's queued write)."""
    if producer.name not in PENDING_FILL:
        raise NotAvailable(f"{producer.name}: no way to queue a slow write on a side stream")
    if consumer.name not in ("torch-cuda", "cupy", "jax-gpu"):
        raise NotAvailable(f"{consumer.name}: no stream-ordered copy to read the import with")
    value = 7.0
    with PENDING_FILL[producer.name](producer, value) as pending:
        imported = importer(pending)
        snapshot = _snapshot(consumer, imported)
    producer.synchronize()
    consumer.synchronize()
    seen = consumer.to_host(snapshot)
    stale = int(np.count_nonzero(seen != value))
    if stale:
        return [f"{stale} of {seen.size} elements read by the consumer predate the producer's "
                "queued write: the hand-over did not order the consumer's stream after the "
                "producer's"]
    return []
