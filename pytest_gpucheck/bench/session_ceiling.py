"""The session's copy ceiling: the best copy each device made, and how far its copies agree.

A benchmark that declares its bytes is timed beside a device copy of as many bytes
(``reference`` in :mod:`.measure`), or, with the L2 flush, beside one larger copy per
process (:mod:`.ceiling`).  One such copy is one moment: on an H100 shared with other
processes a copy of 134 MB read 578 GB/s where the same device copied at 2.95 TB/s, and
a kernel was reported at "182% of the copy ceiling".  A ceiling is what the device can
do, so the fraction a run shows uses the fastest copy of the same bytes that any
benchmark of the run measured on that device (the same timing method, the same size
and so the same cache regime), wherever it ran: the parent combines the records that
isolation workers, xdist workers and the simulator child send back with their reports.

Each record keeps its own copy (``ceiling_gbps``) and gets the session's ceiling with
its provenance (:class:`~pytest_gpucheck.bench.records.SessionCeiling`, a field of the
record, so defined beside it: how many copies, the slowest, who measured the best).
When the copies of one size disagree by more than :data:`CONTENTION_SPREAD`, the summary
says so in one line with the numbers (:func:`contention_lines`) instead of printing a
fraction as if nothing happened.

Pure Python on records: no framework, no NumPy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_gpucheck.bench.records import SessionCeiling

if TYPE_CHECKING:
    from pytest_gpucheck.bench.records import BenchmarkRecord

#: Best over slowest copy of the same bytes on one device above which the copies are
#: said to disagree.  Copies of one size on an idle device agree within a few percent
#: (run 2's CuPy copies: 2.79-2.95 TB/s); a shared H100 gave 578 GB/s against 2.95 TB/s.
CONTENTION_SPREAD = 1.5


@dataclass(frozen=True)
class _Copy:
    gbps: float
    source: str
    backend: str


def _same_backend_spread(copies: list[_Copy]) -> float:
    spreads = [1.0]
    for backend in {copy.backend for copy in copies}:
        own = [copy.gbps for copy in copies if copy.backend == backend]
        spreads.append(max(own) / min(own) if min(own) > 0 else float("inf"))
    return max(spreads)


def device_timed(record: BenchmarkRecord) -> bool:
    """Whether ``record`` times a GPU's work: CUDA events, or JAX's host time up to
    ``block_until_ready`` on a GPU.  Both rounds amortise the host's dispatch
    (:mod:`pytest_gpucheck.backends.timing`), so both read the device's time."""
    return record.method == "cuda-events" or (
        record.method.endswith("+block_until_ready")
        and bool(record.environment.compute_capability))  # a CUDA device's, not the CPU's


#: What stands for the timing method in the regime of GPU copies: any framework's.
DEVICE_TIME = "device time"


def _regime(record: BenchmarkRecord) -> tuple[str, str, int] | None:
    """(device model, timing, bytes moved) of the record's own copy, if it has one.

    A copy that fits a cache runs faster than one that does not, so only copies of the
    same bytes on the same device model make one ceiling.  On a GPU every framework's
    copy is a device time (:func:`device_timed`): the ceiling is one figure per device
    and size, the best copy by any framework of the session (a jax-gpu kernel once read
    110% of a ceiling taken from JAX's copies alone).  On the CPU tier the host clocks
    differ (CPU time, wall time), and copies timed differently are not comparable.
    """
    if not record.ceiling_gbps or not record.ceiling_bytes:
        return None
    timing = DEVICE_TIME if device_timed(record) else record.method
    return (record.environment.device_model, timing, int(record.ceiling_bytes))


def apply_session_ceilings(records: Iterable[BenchmarkRecord]) -> None:
    """Give each record with a copy the best copy of its size on its device among
    ``records`` (sets ``record.session_ceiling``).

    A copy shared by several records (the per-process copy of the L2-flushed ones) is
    one measurement, not several: it is counted once.
    """
    records = list(records)
    copies: dict[tuple[str, str, int], dict[float, _Copy]] = {}
    for record in records:
        regime = _regime(record)
        if regime is not None:
            assert record.ceiling_gbps is not None
            copies.setdefault(regime, {}).setdefault(
                record.ceiling_gbps, _Copy(record.ceiling_gbps,
                                           f"{record.name} [{record.backend}]",
                                           record.backend))
    for record in records:
        regime = _regime(record)
        if regime is None:
            continue
        seen = sorted(copies[regime].values(), key=lambda copy: copy.gbps)
        record.session_ceiling = SessionCeiling(
            gbps=seen[-1].gbps, bytes=regime[2], copies=len(seen), worst_gbps=seen[0].gbps,
            best_from=seen[-1].source, worst_from=seen[0].source,
            same_backend_spread=_same_backend_spread(seen))


def contention_lines(records: Iterable[BenchmarkRecord]) -> list[str]:
    """One line per device whose copies of one size disagree by more than
    :data:`CONTENTION_SPREAD` (after :func:`apply_session_ceilings`); the widest size
    is named with its numbers, the others counted."""
    widest: dict[str, list[SessionCeiling]] = {}
    for record in records:
        ceiling = record.session_ceiling
        if ceiling is None or ceiling.spread <= CONTENTION_SPREAD:
            continue
        device = record.environment.device_model
        if ceiling not in widest.setdefault(device, []):
            widest[device].append(ceiling)
    lines = []
    for device, ceilings in widest.items():
        ceiling = max(ceilings, key=lambda c: c.spread)
        others = len(ceilings) - 1
        numbers = (f"{ceiling.copies} copies of {ceiling.bytes} B ran at "
                   f"{ceiling.worst_gbps:.3g} GB/s ({ceiling.worst_from}) to "
                   f"{ceiling.gbps:.3g} GB/s ({ceiling.best_from}), "
                   f"{ceiling.spread:.1f}x apart")
        if any(c.same_backend_spread > CONTENTION_SPREAD for c in ceilings):
            text = (f"the copy ceiling of {device} was measured under contention: {numbers} "
                    "(copies of one framework disagree: another process on the device)")
        else:
            text = (f"the frameworks' copies on {device} differ: {numbers} (each "
                    "framework's own copies agree: the slower one's copy costs more)")
        lines.append(f"gpucheck: {text}; fractions use the best"
                     + (f"; copies of {others} other size(s) disagree too" if others else ""))
    return lines
