"""Measure one exchange and classify it: zero-copy, copies, refuses, wrong, not available.

Nothing here is looked up in a table: the outcome comes from the arrays.
Memory is shared when the consumer's data pointer is the producer's *and* a
write on either side is seen on the other; layout, dtype, values and the
read-only flag are then compared.  Whether a copy or a refusal is acceptable
is decided afterwards (:mod:`.documented`), never here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts, significant_strides
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.interop.cases import Case
    from pytest_gpucheck.interop.converters import Converter


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """True when both arrays hold bit-identical elements (NaNs and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))


def flipped(value: np.ndarray) -> np.ndarray:
    """A 0-d array differing from ``value`` in its lowest bit (valid for bool too)."""
    raw = bytearray(np.ascontiguousarray(value).reshape(()).tobytes())
    raw[0] ^= 1  # little-endian: the least significant byte; bool stays 0 or 1
    return np.frombuffer(bytes(raw), dtype=value.dtype).reshape(()).copy()


def probe_indices(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """First and last element: together they pin down offset and every stride."""
    first = tuple(0 for _ in shape)
    last = tuple(n - 1 for n in shape)
    return [first] if first == last else [first, last]


def exchange(case: Case, producer: Adapter, consumer: Adapter, converter: Converter) -> Exchange:
    """Produce ``case``, hand it over with ``converter`` and measure what the consumer got."""
    try:
        convert = converter.build(consumer)
    except NotAvailable as exc:
        return Exchange(Outcome.NOT_AVAILABLE, reason=str(exc))
    source, unavailable = produce_for(case, producer, converter)
    if unavailable is not None:
        return unavailable
    result, _ = hand_over(case, source, producer, consumer, convert, converter)
    return result


def produce_for(case: Case, producer: Adapter, converter: Converter) -> tuple[Any, Exchange | None]:
    """The producer's array of ``case``, or a NOT_AVAILABLE exchange saying why there is none.

    Per case, not per pair: a producer may lack the protocol for one dtype only
    (JAX exports no CUDA Array Interface for bfloat16: its attribute raises).
    """
    try:
        source = producer.produce(case)
    except NotAvailable as exc:
        return None, Exchange(Outcome.NOT_AVAILABLE, reason=str(exc))
    missing = converter.missing_producer_attribute(source)
    if missing:
        return None, Exchange(Outcome.NOT_AVAILABLE,
                              reason=f"{producer.name} arrays have no {missing}")
    return source, None


def hand_over(
    case: Case,
    source: Any,
    producer: Adapter,
    consumer: Adapter,
    convert: Callable[[Any], Any],
    converter: Converter,
) -> tuple[Exchange, Any]:
    """Convert ``source`` and classify the result; also return the consumer's array."""
    expected = case.host()
    producer.synchronize()
    before = producer.facts(source)
    held = producer.to_host(source)
    if not same_bytes(held, expected):  # the adapter itself is broken: not a finding
        raise RuntimeError(f"{producer.name} adapter produced wrong values for {case!r}")
    try:
        target = convert(source)
    except NotAvailable as exc:
        return Exchange(Outcome.NOT_AVAILABLE, before, reason=str(exc)), None
    except Exception as exc:  # any refusal is measured; documented.py judges it
        return Exchange(Outcome.REFUSES, before, error=exc), None
    if not consumer.owns(target):
        problem = f"returned a {type(target).__module__}.{type(target).__qualname__}, " \
                  f"not a {consumer.name} array"
        return Exchange(Outcome.WRONG, before, problems=[problem]), target
    after = consumer.facts(target)
    problems = _layout_problems(before, after)
    got = consumer.to_host(target)
    if not problems and not same_bytes(got, expected):
        problems.append(f"values changed: {_first_difference(got, expected)}")
    if before.size == 0:
        # Nothing to share or copy: shape, dtype and device are all there is to check.
        outcome = Outcome.EMPTY
    elif after.pointer == before.pointer and after.device == before.device:
        outcome = Outcome.ZERO_COPY
        problems += _shared_problems(before, after, expected, source, producer, target, consumer)
    else:
        outcome = Outcome.COPIES
        problems += _copy_problems(expected, source, producer, target, consumer)
    if converter.expectation == "zero-copy" and outcome is Outcome.COPIES:
        problems.append(f"copies although it claims zero-copy (data at {after.pointer:#x}, "
                        f"producer's at {before.pointer:#x})")
    if converter.expectation == "copy" and outcome is Outcome.ZERO_COPY:
        problems.append("shares memory although a copy was requested (copy=True)")
    return Exchange(Outcome.WRONG if problems else outcome, before, after, problems), target


def _layout_problems(before: ArrayFacts, after: ArrayFacts) -> list[str]:
    problems = []
    if after.shape != before.shape:
        problems.append(f"shape changed: {before.shape} -> {after.shape}")
    if after.dtype != before.dtype:
        problems.append(f"dtype changed: {before.dtype.name} -> {after.dtype.name}")
    return problems


def _first_difference(got: np.ndarray, expected: np.ndarray) -> str:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"got {got.dtype.name}{list(got.shape)}, expected {expected.dtype.name}" \
               f"{list(expected.shape)}"
    for index in np.ndindex(expected.shape):
        if not same_bytes(got[index], expected[index]):
            return f"at {index}: got {got[index]!r}, expected {expected[index]!r}"
    return "no element differs"


def _shared_problems(
    before: ArrayFacts,
    after: ArrayFacts,
    expected: np.ndarray,
    source: Any,
    producer: Adapter,
    target: Any,
    consumer: Adapter,
) -> list[str]:
    problems = []
    if significant_strides(before.shape, before.strides) != significant_strides(
        after.shape, after.strides
    ):
        problems.append(f"strides changed on shared memory: {before.strides} -> "
                        f"{after.strides} (the consumer reads the elements in another order)")
    consumer_writable = consumer.writable(target)
    if before.readonly and consumer_writable:
        problems.append("read-only lost: the consumer can write into the producer's "
                        "read-only memory")
    if _layout_problems(before, after):
        return problems  # elements do not correspond one to one: writes prove nothing
    for index in probe_indices(before.shape):
        if producer.writable(source):
            problems += _write_seen(source, producer, target, consumer, index, expected,
                                    "producer", "consumer")
        if consumer_writable and not before.readonly:
            problems += _write_seen(target, consumer, source, producer, index, expected,
                                    "consumer", "producer")
    return problems


def _write_seen(
    written: Any, writer: Adapter, other: Any, reader: Adapter,
    index: tuple[int, ...], expected: np.ndarray, writer_role: str, reader_role: str,
) -> list[str]:
    if _sees_write(written, writer, other, reader, index, expected):
        return []
    return [f"a write to the {writer_role} at {index} is not seen by the {reader_role} "
            "although they report the same data pointer"]


def _copy_problems(
    expected: np.ndarray, source: Any, producer: Adapter, target: Any, consumer: Adapter
) -> list[str]:
    if not producer.writable(source):
        return []
    index = probe_indices(expected.shape)[-1]
    if _sees_write(source, producer, target, consumer, index, expected):
        return ["the consumer sees writes to the producer although its data pointer differs"]
    return []


def _sees_write(written: Any, writer: Adapter, other: Any, reader: Adapter,
                index: tuple[int, ...], expected: np.ndarray) -> bool:
    """Does ``reader`` see, in ``other``, a changed value ``writer`` wrote to ``written`` at
    ``index``?  The value is put back afterwards."""
    new = flipped(expected[index])
    writer.write(written, index, new)
    try:
        seen = reader.to_host(other)[index]
    finally:
        writer.write(written, index, np.asarray(expected[index]))
    return same_bytes(np.asarray(seen), new)
