"""A self-contained HTML page (inline SVG, no dependency) of baseline vs this
run for every benchmark, and of the history of its stored runs.

For people who would rather look than read: each benchmark gets a strip of
its per-round samples (baseline above, this run below, medians marked) and a
line of the medians of every stored run with this run at the end.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from pytest_gpucheck.bench.baseline import BaselineStore
from pytest_gpucheck.bench.gate import Verdict, format_seconds
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.reporting.atomic_files import write_text_atomically

WIDTH, STRIP_HEIGHT, HISTORY_HEIGHT, MARGIN = 520, 90, 120, 60
COLORS = {"baseline": "#4878a8", "current": "#e07b28"}
STATUS_COLORS = {"regression": "#c0392b", "improvement": "#27ae60"}


def write_plot(
    path: Path,
    results: Sequence[tuple[BenchmarkRecord, Verdict | None]],
    store: BaselineStore,
) -> None:
    """Write the page to ``path`` atomically."""
    sections = []
    for record, verdict in results:
        env = record.environment
        baseline = store.baseline(record.name, env.device_model, record.backend)
        history = store.history(record.name, env.device_model, record.backend)
        sections.append(_section(record, verdict, baseline, history))
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        "<title>pytest-gpucheck benchmarks</title><style>"
        "body{font-family:sans-serif;margin:2em}section{margin-bottom:2.5em}"
        "h2{font-size:1em;font-family:monospace}svg{display:block;margin:.3em 0}"
        ".note{color:#555;font-size:.9em}</style></head><body>"
        "<h1>pytest-gpucheck benchmarks</h1>"
        "<p class='note'>Per-round samples: <span style='color:#4878a8'>baseline</span>, "
        "<span style='color:#e07b28'>this run</span>; bars mark the medians. History: median "
        "of each stored run, oldest first, this run last.</p>"
        + "\n".join(sections) + "</body></html>\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, page)


def _section(record: BenchmarkRecord, verdict: Verdict | None,
             baseline: BenchmarkRecord | None, history: list[BenchmarkRecord]) -> str:
    env = record.environment
    status = verdict.status if verdict else "not compared"
    change = "" if verdict is None or verdict.change is None else f", change {verdict.change:+.1%}"
    color = STATUS_COLORS.get(status, "#333")
    title = (f"<h2>{html.escape(record.name)}</h2><div class='note'>{html.escape(record.backend)}"
             f" on {html.escape(env.device_model)} ({html.escape(record.method)}) &mdash; "
             f"<b style='color:{color}'>{html.escape(status)}</b>{html.escape(change)}</div>")
    return (f"<section>{title}{_strip(record, baseline)}"
            f"{_history([*history, record])}</section>")


def _strip(record: BenchmarkRecord, baseline: BenchmarkRecord | None) -> str:
    rows = ([("baseline", baseline.samples)] if baseline else []) + [("current", record.samples)]
    values = [value for _, samples in rows for value in samples]
    low, high = min(values), max(values)
    span = (high - low) or high or 1.0
    height = 30 * len(rows) + 30

    def x(value: float) -> float:
        return MARGIN + (value - low) / span * (WIDTH - 2 * MARGIN)

    parts = [f"<svg width='{WIDTH}' height='{height}' role='img'>"]
    for row, (label, samples) in enumerate(rows):
        y = 20 + 30 * row
        parts.append(f"<text x='4' y='{y + 4}' font-size='11'>{label}</text>")
        for value in samples:
            parts.append(f"<circle cx='{x(value):.1f}' cy='{y}' r='3' fill='{COLORS[label]}' "
                         f"fill-opacity='0.5'><title>{format_seconds(value)}</title></circle>")
        middle = sorted(samples)[len(samples) // 2]
        parts.append(f"<line x1='{x(middle):.1f}' x2='{x(middle):.1f}' y1='{y - 10}' "
                     f"y2='{y + 10}' stroke='{COLORS[label]}' stroke-width='2'/>")
    axis_y = height - 8
    parts.append(f"<text x='{MARGIN}' y='{axis_y}' font-size='10'>{format_seconds(low)}</text>")
    parts.append(f"<text x='{WIDTH - MARGIN}' y='{axis_y}' font-size='10' "
                 f"text-anchor='end'>{format_seconds(high)}</text></svg>")
    return "".join(parts)


def _history(records: list[BenchmarkRecord]) -> str:
    medians = [record.median for record in records]
    low, high = min(medians), max(medians)
    span = (high - low) or high or 1.0
    step = (WIDTH - 2 * MARGIN) / max(len(medians) - 1, 1)

    def y(value: float) -> float:
        return 10 + (1 - (value - low) / span) * (HISTORY_HEIGHT - 30)

    points = [(MARGIN + i * step, y(value)) for i, value in enumerate(medians)]
    parts = [f"<svg width='{WIDTH}' height='{HISTORY_HEIGHT}' role='img'>",
             "<text x='4' y='14' font-size='11'>history</text>"]
    if len(points) > 1:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f"<polyline points='{path}' fill='none' stroke='#888'/>")
    for index, ((px, py), record) in enumerate(zip(points, records, strict=True)):
        color = COLORS["current"] if index == len(records) - 1 else COLORS["baseline"]
        label = html.escape(f"{record.saved_at or 'this run'}: {format_seconds(record.median)}")
        parts.append(f"<circle cx='{px:.1f}' cy='{py:.1f}' r='3.5' fill='{color}'>"
                     f"<title>{label}</title></circle>")
    parts.append(f"<text x='4' y='{HISTORY_HEIGHT - 24}' font-size='10'>"
                 f"{format_seconds(low)}</text><text x='4' y='24' font-size='10'>"
                 f"{format_seconds(high)}</text></svg>")
    return "".join(parts)
