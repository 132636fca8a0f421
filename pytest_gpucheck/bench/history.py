"""Baselines between CI runs: merge folders, prune old runs, show and plot the history.

Usage (``python -m pytest_gpucheck.bench.history``)::

    python -m pytest_gpucheck.bench.history DIR [--merge OTHER ...] [--prune-keep N]
                                                [--plot history.html]

* ``--merge OTHER``: copy into ``DIR`` every run file of ``OTHER`` that ``DIR``
  lacks (run files have unique names, so merging never overwrites; a file that
  is not a valid run, or sits in another device model's folder, is refused
  with one line and nothing is copied);
* ``--prune-keep N``: keep the newest ``N`` runs per (device model, backend)
  and delete the older files;
* prints, per device model, backend and benchmark, the medians of the stored
  runs oldest first, with the gate's decision where the run recorded one;
* ``--plot PATH.html``: the same as a picture, one line per benchmark and
  device, regressions and improvements marked.

Exit status: 0, or 4 with one line for bad input (a corrupt file, a folder
that does not exist).
"""

from __future__ import annotations

import argparse
import html
import shutil
import sys
from pathlib import Path

from pytest_gpucheck.bench.baseline import RUN_SUFFIX, BaselineError, BaselineStore, read_run
from pytest_gpucheck.bench.gate import format_seconds
from pytest_gpucheck.bench.plot import COLORS, HISTORY_HEIGHT, MARGIN, STATUS_COLORS, WIDTH
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.reporting.atomic_files import write_text_atomically

USAGE_ERROR = 4


def merge(target: BaselineStore, other: Path) -> list[Path]:
    """Copy the run files of ``other`` that ``target`` lacks; validate them all first."""
    if not other.is_dir():
        raise BaselineError(f"--merge {other}: no such folder; give a baseline folder "
                            "(DEVICE/BACKEND/*.json)")
    files = sorted(other.glob(f"*/*/*{RUN_SUFFIX}"))
    for path in files:
        read_run(path)  # refuses corrupt files and files in another device's folder
    copied = []
    for path in files:
        destination = target.root / path.relative_to(other)
        if destination.exists():
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        temporary = destination.with_name(f".{destination.name}.tmp")
        shutil.copyfile(path, temporary)
        temporary.replace(destination)
        copied.append(destination)
    return copied


def prune(store: BaselineStore, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` runs of every (device model, backend)."""
    removed = []
    for runs in store.all_runs().values():
        for run in runs[: max(len(runs) - keep, 0)]:
            run.path.unlink()
            removed.append(run.path)
    return removed


def history_lines(store: BaselineStore) -> list[str]:
    """Per device model, backend and benchmark: the medians of its runs, oldest first."""
    lines = []
    for (device, backend), runs in sorted(store.all_runs().items()):
        names = sorted({name for run in runs for name in run.records})
        lines.append(f"{device} / {backend}: {len(runs)} run(s)")
        for name in names:
            points = []
            for run in runs:
                record = run.records.get(name)
                if record is None:
                    continue
                gate = record.extra.get("gate", "")
                mark = {"regression": " REGRESSION", "improvement": " improvement",
                        "inconclusive": " inconclusive"}.get(gate, "")
                points.append(f"{format_seconds(record.median)}{mark}")
            lines.append(f"  {name}: " + " -> ".join(points))
    return lines


def plot_history(store: BaselineStore, path: Path) -> None:
    """One SVG line per (device, backend, benchmark): medians of the stored runs, the
    gate's regressions and improvements in colour."""
    sections = []
    for (device, backend), runs in sorted(store.all_runs().items()):
        names = sorted({name for run in runs for name in run.records})
        for name in names:
            records = [run.records[name] for run in runs if name in run.records]
            sections.append(f"<section><h2>{html.escape(name)}</h2><div>{html.escape(backend)}"
                            f" on {html.escape(device)}, {len(records)} run(s)</div>"
                            f"{_line(records)}</section>")
    page = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>pytest-gpucheck "
            "benchmark history</title><style>body{font-family:sans-serif;margin:2em}"
            "section{margin-bottom:2em}</style></head><body><h1>Benchmark history</h1>"
            "<p>Median per stored run, oldest left; red: the gate found a regression, green: "
            "an improvement.</p>" + ("".join(sections) or "<p>No stored runs.</p>")
            + "</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, page)


def _line(records: list[BenchmarkRecord]) -> str:
    medians = [record.median for record in records]
    low, high = min(medians), max(medians)
    span = (high - low) or high or 1.0
    step = (WIDTH - 2 * MARGIN) / max(len(medians) - 1, 1)
    points = [(MARGIN + i * step, 10 + (1 - (m - low) / span) * (HISTORY_HEIGHT - 30))
              for i, m in enumerate(medians)]
    parts = [f"<svg width='{WIDTH}' height='{HISTORY_HEIGHT}' role='img'>"]
    if len(points) > 1:
        parts.append("<polyline points='" + " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                     + "' fill='none' stroke='#888'/>")
    for (x, y), record in zip(points, records, strict=True):
        gate = record.extra.get("gate", "")
        color = STATUS_COLORS.get(gate, COLORS["baseline"])
        label = html.escape(f"{record.saved_at}: {format_seconds(record.median)} {gate}".strip())
        parts.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='4' fill='{color}'>"
                     f"<title>{label}</title></circle>")
    parts.append(f"<text x='4' y='{HISTORY_HEIGHT - 24}' font-size='10'>{format_seconds(low)}"
                 f"</text><text x='4' y='24' font-size='10'>{format_seconds(high)}</text></svg>")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_gpucheck.bench.history",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the baseline folder (--gpu-bench-baseline)")
    parser.add_argument("--merge", type=Path, action="append", default=[], metavar="OTHER")
    parser.add_argument("--prune-keep", type=int, default=None, metavar="N")
    parser.add_argument("--plot", type=Path, default=None, metavar="PATH.html")
    args = parser.parse_args(argv)
    store = BaselineStore(args.folder)
    try:
        if args.prune_keep is not None and args.prune_keep < 1:
            raise BaselineError(f"--prune-keep={args.prune_keep}: keep at least 1 run")
        if args.plot is not None and args.plot.suffix != ".html":
            raise BaselineError(f"--plot={args.plot}: the plot is HTML; give a path ending "
                                "in .html")
        for other in args.merge:
            copied = merge(store, other)
            print(f"merged {len(copied)} run file(s) from {other}")
        store.load_all()
        if args.prune_keep is not None:
            removed = prune(store, args.prune_keep)
            print(f"pruned {len(removed)} run file(s), keeping the newest {args.prune_keep} "
                  "per device model and backend")
            store.load_all()
    except BaselineError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for line in history_lines(store) or [f"no stored runs in {args.folder}"]:
        print(line)
    if args.plot is not None:
        plot_history(store, args.plot)
        print(f"history plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
