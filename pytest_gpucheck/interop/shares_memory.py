"""``assert_shares_memory(a, b)``: the helper users call in their own tests."""

from __future__ import annotations

from typing import Any

from pytest_gpucheck.backends.adapter_base import Adapter


def _adapter_for(array: Any) -> Adapter:
    """The adapter whose framework owns ``array`` (frameworks are imported only if loaded)."""
    import sys

    from pytest_gpucheck.backends import get_backend
    from pytest_gpucheck.interop.adapters import ADAPTERS, get_adapter

    modules = {"numpy": "numpy", "torch-cpu": "torch", "torch-cuda": "torch", "jax-cpu": "jax",
               "jax-gpu": "jax", "cupy": "cupy", "numba-cuda": "numba",
               "numba-cudasim": "numba", "cuda-python": "cuda.core"}
    for name in ADAPTERS:
        if modules[name] not in sys.modules:
            continue  # an array of a framework that was never imported cannot be here
        try:
            adapter = get_adapter(get_backend(name))
            if not adapter.owns(array):
                continue
            # The array may live on any GPU of the node: take the adapter of its device.
            device = adapter.facts(array).device
            if device.startswith("cuda:"):
                adapter = get_adapter(get_backend(name, int(device.split(":")[1])))
            if adapter.device == device:
                return adapter
        except Exception:  # a framework that cannot judge this array is not its owner
            continue
    raise TypeError(f"assert_shares_memory: no interop adapter knows {type(array).__name__}")


def assert_shares_memory(a: Any, b: Any) -> None:
    """Assert that ``a`` and ``b`` are the same memory seen through two frameworks.

    Both must start at the same address on the same device, with the same
    shape, dtype and (for axes longer than 1) strides; where a side is
    writable, a write to it must be visible in the other.  The arrays are
    restored afterwards.  Raises ``AssertionError`` naming the first difference.
    """
    __tracebackhide__ = True
    from pytest_gpucheck.backends.array_facts import significant_strides
    from pytest_gpucheck.interop.classify import flipped, probe_indices, same_bytes

    first, second = _adapter_for(a), _adapter_for(b)
    fa, fb = first.facts(a), second.facts(b)
    for what, x, y in (("device", fa.device, fb.device), ("shape", fa.shape, fb.shape),
                       ("dtype", fa.dtype, fb.dtype), ("data pointer", fa.pointer, fb.pointer),
                       ("strides", significant_strides(fa.shape, fa.strides),
                        significant_strides(fb.shape, fb.strides))):
        if x != y:
            raise AssertionError(f"arrays do not share memory: {what} {x!r} != {y!r}\n"
                                 f"a: {fa.describe()}\nb: {fb.describe()}")
    if fa.size == 0:
        return
    for writer, written, adapter, reader, other in (
        ("a", a, first, second, b), ("b", b, second, first, a)
    ):
        if not adapter.writable(written):
            continue
        index = probe_indices(fa.shape)[-1]
        old = adapter.to_host(written)[index]
        new = flipped(old)
        adapter.write(written, index, new)
        try:
            seen = reader.to_host(other)[index]
        finally:
            adapter.write(written, index, old)
        if not same_bytes(seen, new):
            raise AssertionError(f"arrays do not share memory: a write to {writer} at {index} "
                                 "is not seen by the other")
