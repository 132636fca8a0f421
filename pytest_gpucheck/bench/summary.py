"""The gate's summary: terminal lines and Markdown for ``--gpu-report``."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest

from pytest_gpucheck.bench.gate import (
    Verdict,
    brief_verdict,
    format_interval,
    format_seconds,
    format_verdict,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.session_ceiling import contention_lines, device_timed
from pytest_gpucheck.hookspecs import ReportSection

if TYPE_CHECKING:
    from pytest_gpucheck.bench.session import BenchSession

Result = tuple[BenchmarkRecord, "Verdict | None"]


def derived_figures(record: BenchmarkRecord) -> str:
    """``12.3 GB/s (45% of the 27.1 GB/s copy ceiling), 3.1 GFLOP/s, compile 0.35 s``."""
    parts = [f"median {format_seconds(record.median)} ({record.method})"]
    if record.launch_overhead is not None:
        parts.append(f"launch overhead {format_seconds(record.launch_overhead)}/call")
    if record.dispatch_bound:
        parts.append("dispatch-bound: the device waited on the host's dispatch, so the "
                     "device time is at most this median")
    if record.gbps is not None:
        text = f"{record.gbps:.3g} GB/s"
        if above_a_device_copy(record):
            # Not a result: on a GPU nothing that reads and writes these bytes beats a copy
            # of them, so one of the two timings is wrong (the first H100 run: "182%").
            best = record.session_ceiling
            which = (f"the best of {best.copies} copies" if best is not None and best.copies > 1
                     else "the copy")
            text += (f" (MEASUREMENT ERROR, not a faster kernel: {which} of the same bytes on "
                     f"this device measured {record.ceiling:.3g} GB/s, slower than this "
                     "kernel; one of the two timings is wrong, e.g. the GPU was shared)")
        elif record.fraction_of_ceiling is not None and record.ceiling:
            text += f" ({record.fraction_of_ceiling:.0%} of the {record.ceiling:.3g} GB/s " \
                    "copy ceiling)"
        parts.append(text)
    if record.gflops is not None:
        parts.append(f"{record.gflops:.3g} GFLOP/s")
    parts.append(f"first call {format_seconds(record.first_call_seconds)}")
    faults = record.extra.get("page_faults_per_call")
    if faults is not None and float(faults) >= 1.0:
        # Memory the kernel maps afresh on each call: part of what it costs as users run
        # it (the gate's processes keep the allocator's own regime, bench/interleave.py).
        parts.append(f"{float(faults):.0f} page faults per call")
    if record.l2_flushed:
        parts.append("L2 flushed")
    if (record.fraction_of_ceiling or 0.0) > 1.0 and not above_a_device_copy(record):
        parts.append("above 100% of the copy ceiling: a copy of the same bytes is slower than "
                     "this kernel here, so it is no bound")
    return ", ".join(parts)


def above_a_device_copy(record: BenchmarkRecord) -> bool:
    """A GPU benchmark (any framework's device time) faster than the best device copy
    of the same bytes: a measurement error.  (On a CPU a copy also reads its
    destination before writing it, so a kernel can beat it honestly.)"""
    return device_timed(record) and (record.fraction_of_ceiling or 0.0) > 1.0


def _fraction(record: BenchmarkRecord) -> str:
    """``62%``; a figure above 100% says the copy was no bound for this kernel."""
    if above_a_device_copy(record):
        return "n/a (MEASUREMENT ERROR: faster than a device copy of the same bytes)"
    fraction = record.fraction_of_ceiling or 0.0
    return f"{fraction:.0%}" + (" (above the copy: not a bound here)" if fraction > 1.0 else "")


def gate_terminal_lines(results: list[Result], *, compared: bool,
                        family_level: float | None = None,
                        interleaved: bool = False) -> list[str]:
    """Lines for the terminal summary: figures per benchmark, then the gate's verdicts;
    with ``family_level`` (``--gpu-bench-against``, ``interleaved``, or a stored gate that
    fails) the family the run was judged as."""
    if not results:
        return []
    lines = ["---------------------------- gpucheck benchmarks ----------------------------"]
    for record, _ in results:
        lines.append(f"  {record.name} [{record.backend} on "
                     f"{record.environment.device_model}]: {derived_figures(record)}")
    lines += contention_lines(record for record, _ in results)
    if not compared:
        return lines
    verdicts = [verdict for _, verdict in results if verdict is not None]
    counts = Counter(verdict.status for verdict in verdicts)
    # Regressions first: they are why the run failed.
    for status in ("regression", "inconclusive", "improvement", "no-baseline", "not-comparable"):
        for verdict in verdicts:
            if verdict.status == status:
                lines.append(f"  {format_verdict(verdict)}")
    # Unchanged ones last, one short line each: the change and its interval, so that
    # every compared benchmark's figure is on the screen, not only the flagged ones'.
    for verdict in verdicts:
        if verdict.status == "unchanged":
            lines.append(f"  {brief_verdict(verdict) or format_verdict(verdict)}")
    lines.append("gpucheck benchmark gate: " + ", ".join(
        f"{counts[status]} {status}" for status in
        ("regression", "improvement", "unchanged", "inconclusive", "no-baseline", "not-comparable")
        if counts[status]) if verdicts else "gpucheck benchmark gate: nothing compared")
    advisory = sum(verdict.advisory for verdict in verdicts)
    if advisory:
        lines.append(f"gpucheck benchmark gate: {advisory} regression(s) against the stored "
                     "baseline are advisory and do not fail the run (--gpu-bench-compare-fails "
                     "makes them fail)")
    if family_level is not None:
        family = sum(verdict.family is not None and verdict.pvalue is not None
                     and verdict.status != "not-comparable" for verdict in verdicts)
        if interleaved and not any(verdict.pair_figures for verdict in verdicts):
            # No stored comparison was made either: a family of none bounds nothing.
            lines.append("gpucheck benchmark gate: no benchmark was compared with the "
                         "baseline checkout")
        elif any(verdict.pair_figures for verdict in verdicts):
            lines.append(f"gpucheck benchmark gate: {family} benchmark(s) compared as one "
                         f"family (Holm's method): a run of identical code fails with "
                         f"probability at most {family_level:g}")
        else:
            # The stored p-values treat rounds as independent; they are not: no bound.
            lines.append(f"gpucheck benchmark gate: {family} stored comparison(s) judged as "
                         f"one family (Holm's method at {family_level:g}); the stored mode's "
                         "p-values treat rounds as independent, so this does not bound a "
                         "run's false alarms (measured rates: docs/benchmark-evidence.md)")
    return lines


def gate_markdown(results: list[Result], *, compared: bool) -> str:
    """A Markdown table of every benchmark, its figures and its verdict."""
    if not results:
        return ""
    lines = [
        "## Benchmarks",
        "",
        "| benchmark | backend | device | median | launch overhead | GB/s "
        "| % of copy ceiling | GFLOP/s | gate | change | interval |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record, verdict in results:
        fraction = record.fraction_of_ceiling
        change = verdict.change if verdict else None
        interval = verdict.interval if verdict else None
        level = verdict.level if verdict else None
        lines.append(
            "| " + " | ".join([
                f"`{record.name}`",
                record.backend,
                record.environment.device_model,
                format_seconds(record.median) + (" (dispatch-bound: device time at most this)"
                                                  if record.dispatch_bound else ""),
                ("" if record.launch_overhead is None
                 else format_seconds(record.launch_overhead)),
                "" if record.gbps is None else f"{record.gbps:.3g}",
                "" if fraction is None else _fraction(record),
                "" if record.gflops is None else f"{record.gflops:.3g}",
                (verdict.status if verdict else ("not compared" if not compared else "")),
                "" if change is None else f"{change:+.1%}",
                "" if interval is None or level is None else
                format_interval(interval[0], interval[1], level),
            ]) + " |"
        )
    contention = contention_lines(record for record, _ in results)
    if contention:
        lines += ["", *contention]
    return "\n".join(lines) + "\n"


def some_of(names: list[str], shown: int = 3) -> str:
    """``a, b, c and 4 more``."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def publish(config: pytest.Config, state: BenchSession) -> None:
    """The gate's section of the report (:attr:`BenchSession.section`): the summary's
    lines, the run's errors and notes, the plot, and the data the report file keeps."""
    lines = gate_terminal_lines(state.results, compared=state.gating,
                                family_level=state.family_level
                                if state.against is not None or state.stored_fails else None,
                                interleaved=state.against is not None)
    errors = [state.save_error] if state.save_error else []
    errors += [f"gpucheck benchmark gate: the run fails: Holm's step-down over the run's "
               f"benchmarks found {format_verdict(verdict)}" for verdict in
               state.family_regressions]
    errors += [state.peer_error] if state.peer_error else []
    if state.undecided:
        names = some_of([f"{v.name} [{v.backend}]" for v in state.undecided], 5)
        compared = sum(v is not None and v.status in ("regression", "improvement", "unchanged",
                                                      "inconclusive")
                       for _, v in state.results)
        line = (f"gpucheck benchmark gate: {len(state.undecided)} of {compared} compared "
                f"benchmark(s) could not be decided (INCONCLUSIVE: {names}); this run does not "
                "show that they did not slow down")
        if state.inconclusive_fails:
            errors.append(f"{line}; the run fails (--gpu-bench-inconclusive=fail)")
        else:
            lines.append(f"{line}; --gpu-bench-inconclusive=fail makes a required check fail "
                         "on it")
    if state.missing_in_baseline and state.against is not None:
        missing = state.missing_in_baseline
        lines.append(f"gpucheck benchmark gate: {len(missing)} benchmark(s) of this run are "
                     f"not tests in the baseline checkout {state.against}, so nothing judged "
                     f"them (new benchmarks, or a checkout of other code): {some_of(missing, 5)}")
    errors += [w["error"] for w in state.worker_saves if w.get("error")]
    lines += errors
    saved = (len(state.local_records) if state.saved else 0) + sum(
        int(w.get("records", 0)) for w in state.worker_saves if not w.get("error"))
    if saved and not errors:
        lines.append(f"gpucheck: saved {saved} benchmark result(s) to {state.store.root}")
    if state.plot is not None:
        from pytest_gpucheck.bench.plot import write_plot

        write_plot(state.plot, state.results, state.store)
        lines.append(f"gpucheck: benchmark plot written to {state.plot}")
    data = {
        "compared": state.gating,
        "against": str(state.against) if state.against is not None else None,
        "baseline_dir": str(state.store.root),
        "results": [{"record": record.as_dict(),
                     "verdict": verdict.as_dict() if verdict else None}
                    for record, verdict in state.results],
    }
    # The report asks for it (pytest_gpucheck_report_sections, bench/plugin.py).
    state.section = ReportSection("benchmarks", data,
                                  gate_markdown(state.results, compared=state.gating), lines)
