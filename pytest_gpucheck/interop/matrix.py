"""The per-protocol pair matrix: which hand-overs were zero-copy, copies, refused or wrong.

Each suite item leaves its cell and the outcomes it measured in its
``user_properties`` (serialized with the report, so cells measured in the
simulator's child process or on xdist workers arrive here too).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_gpucheck.interop.outcomes import Outcome

#: user_properties key naming an item's matrix cell.
CELL_PROPERTY = "gpucheck_interop_cell"
#: user_properties key of what an item measured.
OUTCOMES_PROPERTY = "gpucheck_interop_outcomes"
#: user_properties key of a producer's DLPack export check.
EXPORT_PROPERTY = "gpucheck_interop_export"
#: user_properties key of a documented behaviour that changed for the better.
CHANGED_PROPERTY = "gpucheck_interop_changed"
ORDER = [o.value for o in Outcome]

#: Width the terminal legend is wrapped to (an 80-column terminal shows it whole).
LEGEND_WIDTH = 80
#: What the cell words mean, printed under the tables (a passing run may show
#: `wrong (known)`, which reads like a failure without it).
LEGEND = (
    "legend: zero-copy: the consumer shares the producer's memory | copies, refuses: it "
    "got a copy, or the converter raised, as the library documents (notes below) | a/b: "
    "several outcomes over the cases | WRONG: a failed item (listed in the failures) | "
    "wrong (known): a known upstream defect, measured as wrong: the item is an expected "
    "failure (xfail), the defect named below | n/a: a side lacks the protocol (reason "
    "below) | empty: only size-0 arrays | -: pair not run"
)


@dataclass
class Cell:
    """What one (protocol, producer, consumer) cell saw over all its items."""

    counts: Counter[str] = field(default_factory=Counter)
    documented: set[str] = field(default_factory=set)
    known: set[str] = field(default_factory=set)
    failed: bool = False
    reason: str = ""

    @property
    def text(self) -> str:
        if self.failed:
            return "WRONG"
        if self.known:
            # A known defect is a wrong result or a refusal that is a bug (JAX's copy=True).
            return ("wrong" if self.counts.get(Outcome.WRONG.value) else "refuses") + " (known)"
        seen = [o for o in ORDER if self.counts.get(o) and o != Outcome.EMPTY.value]
        if not seen:
            return "n/a" if self.reason else ("empty" if self.counts else "-")
        return "/".join(seen)


@dataclass
class PairMatrix:
    """All cells, keyed by (protocol, producer, consumer)."""

    cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)
    #: producer -> what its __dlpack__ did (device, versioned capsule, keywords, passed)
    exports: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: documented behaviour -> "changed in VERSION" message (it no longer reproduces)
    changes: dict[str, str] = field(default_factory=dict)

    def record(self, report: pytest.TestReport) -> None:
        props: dict[str, Any] = dict(report.user_properties)
        self.changes.update(props.get(CHANGED_PROPERTY) or {})
        export = props.get(EXPORT_PROPERTY)
        if export and _final_phase(report):
            self.exports[export["producer"]] = {**export, "passed": report.passed}
        where = props.get(CELL_PROPERTY)
        if not where or not _final_phase(report):
            return
        key = (where["protocol"], where["producer"], where["consumer"])
        cell = self.cells.setdefault(key, Cell())
        measured = props.get(OUTCOMES_PROPERTY) or {}
        cell.counts.update(measured.get("counts", {}))
        cell.documented.update(measured.get("documented", []))
        cell.known.update(measured.get("known", []))
        if report.failed:
            cell.failed = True
        elif report.skipped and not hasattr(report, "wasxfail") and not cell.counts:
            longrepr = report.longrepr
            text = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
            cell.reason = text.removeprefix("Skipped: ")

    def protocols(self) -> list[str]:
        return sorted({p for p, _, _ in self.cells}, key=_protocol_order)

    def frameworks(self, protocol: str) -> list[str]:
        from pytest_gpucheck.interop.adapters import ADAPTERS

        names = {n for p, a, b in self.cells if p == protocol for n in (a, b)}
        return [n for n in ADAPTERS if n in names] + sorted(names - set(ADAPTERS))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "pytest-gpucheck/interop/v1",
            "cells": [
                {"protocol": p, "producer": a, "consumer": b, "summary": cell.text,
                 "counts": dict(cell.counts), "documented": sorted(cell.documented),
                 "known_defects": sorted(cell.known), "failed": cell.failed,
                 "reason": cell.reason}
                for (p, a, b), cell in sorted(self.cells.items())
            ],
            "dlpack_exports": [self.exports[name] for name in sorted(self.exports)],
            "changed": dict(sorted(self.changes.items())),
        }

    def _table(self, protocol: str) -> tuple[list[str], list[list[str]]]:
        names = self.frameworks(protocol)
        rows = []
        for producer in names:
            row = [producer]
            for consumer in names:
                cell = self.cells.get((protocol, producer, consumer))
                row.append(cell.text if cell else "-")
            rows.append(row)
        return ["producer \\ consumer", *names], rows

    def terminal_lines(self, width: int | None = None) -> list[str]:
        """The tables, the legend and the notes, fitted to ``width`` columns (None: 80 for
        the legend, tables whole): a table wider than that is split into tables of the
        consumers that fit, each with the producer column (a wrapped row scrambled its
        columns, as the conformance matrix's would)."""
        lines: list[str] = []
        for protocol in self.protocols():
            header, rows = self._table(protocol)
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
            lines.append(f"interop {protocol}:")
            for columns in _column_groups(widths, width):
                for row in [header, *rows]:
                    lines.append(("  " + "  ".join(row[i].ljust(widths[i])
                                                   for i in columns)).rstrip())
        if self.cells:
            # One line was 464 characters: wrapped like the conformance matrix's legend.
            lines += textwrap.wrap(LEGEND, width=width or LEGEND_WIDTH, subsequent_indent="  ",
                                   break_on_hyphens=False)
        if self.exports:
            lines.append("interop DLPack export (device; capsule for max_version=(1, 0)):")
            lines += [f"  {line}" for line in self._export_lines()]
        lines += self._notes()
        return lines

    def markdown(self) -> str:
        out = ["## Interop pair matrix", ""]
        for protocol in self.protocols():
            header, rows = self._table(protocol)
            out += [f"### {protocol}", "", "| " + " | ".join(header) + " |",
                    "|" + " --- |" * len(header)]
            out += ["| " + " | ".join(row) + " |" for row in rows]
            out.append("")
        if self.cells:
            out += [LEGEND.replace("legend:", "Legend:", 1), ""]
        if self.exports:
            out += ["### DLPack export", ""] + [f"- {line}" for line in self._export_lines()] + [""]
        out += self._notes(markdown=True)
        return "\n".join(out) + "\n"

    def _export_lines(self) -> list[str]:
        lines = []
        for name, export in sorted(self.exports.items()):
            versioned = {True: "versioned", False: "legacy (unversioned)", None: "?"}[
                export.get("versioned")]
            if export.get("missing"):
                lines.append(f"{name}: n/a, {export['missing']}")
                continue
            status = "ok" if export.get("passed") else "FAILED"
            lines.append(f"{name}: {status}, device {tuple(export.get('device') or ())}, "
                         f"{versioned}, keywords {', '.join(export.get('keywords') or [])}")
        return lines

    def _notes(self, markdown: bool = False) -> list[str]:
        from pytest_gpucheck.interop.documented import DOCUMENTED

        used = set().union(*(c.documented | c.known for c in self.cells.values())) \
            if self.cells else set()
        notes = [f"{e.key}: {e.summary} ({e.source})" for e in DOCUMENTED if e.key in used]
        reasons = sorted({c.reason.removeprefix("not available: ")
                          for c in self.cells.values() if c.reason})
        lines: list[str] = []
        changes = [self.changes[key] for key in sorted(self.changes)]
        for title, items in (("documented behaviours and known defects seen", notes),
                             ("documented behaviours that changed", changes),
                             ("not available", reasons)):
            if not items:
                continue
            if markdown:
                lines += [f"### {title.capitalize()}", "", *[f"- {i}" for i in items], ""]
            else:
                lines += [f"interop {title}:", *[f"  {i}" for i in items]]
        return lines


def _final_phase(report: pytest.TestReport) -> bool:
    return report.when == "call" or (report.when == "setup" and not report.passed)


def _protocol_order(protocol: str) -> tuple[int, str]:
    from pytest_gpucheck.interop.converters import PROTOCOLS

    names = list(PROTOCOLS)
    return (names.index(protocol) if protocol in names else len(names), protocol)


def _column_groups(widths: list[int], width: int | None) -> list[list[int]]:
    """Column indexes of each table a table of these column ``widths`` is split into so
    that every row fits ``width`` (None: one table): the first (producer) column in each,
    then as many consumer columns as fit, at least one."""
    groups = [[0]]
    used = 2 + widths[0]
    for index in range(1, len(widths)):
        if width is not None and len(groups[-1]) > 1 and used + 2 + widths[index] > width:
            groups.append([0])
            used = 2 + widths[0]
        groups[-1].append(index)
        used += 2 + widths[index]
    return groups
