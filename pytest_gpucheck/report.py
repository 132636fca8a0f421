"""The conformance matrix: backend x test family, in the terminal and as JSON/Markdown.

Each test report carries its cell (``report.gpucheck_cell``, a dict of
strings), set from the item when the report is made, so the matrix is also
right under pytest-xdist and for items run in a child process: those reports
are serialized with their attributes and rebuilt in this process.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .atomic_files import write_text_atomically

CELL_KEY = pytest.StashKey[dict[str, str]]()
MATRIX_KEY = pytest.StashKey["Matrix"]()
OUTCOMES = ("passed", "failed", "skipped")


def set_cell(item: pytest.Item, *, backend: str, family: str) -> None:
    """Put ``item`` in the matrix at (``family``, ``backend``)."""
    item.stash[CELL_KEY] = {"backend": backend, "family": family}


def cell_of(item: pytest.Item) -> dict[str, str] | None:
    """The item's cell: set explicitly, or derived from its ``gpu_backend`` parameter."""
    cell = item.stash.get(CELL_KEY, None)
    if cell is not None:
        return cell
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("gpu_backend") is None:
        return None
    marker = item.get_closest_marker("gpu_family")
    family = str(marker.args[0]) if marker and marker.args else _module_family(item)
    return {"backend": str(callspec.params["gpu_backend"]), "family": family}


def _module_family(item: pytest.Item) -> str:
    stem = item.path.stem
    return stem.removeprefix("test_").removesuffix("_test")


@dataclass
class Section:
    """An extra part of the report added by a feature (interop matrix, benchmark gate)."""

    data: Any
    markdown: str
    terminal_lines: list[str]


@dataclass
class Matrix:
    """Outcome counts per (family, backend), plus skip reasons and extra sections."""

    counts: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    skip_reasons: dict[tuple[str, str], str] = field(default_factory=dict)
    sections: dict[str, Section] = field(default_factory=dict)
    backends_info: dict[str, dict[str, str]] = field(default_factory=dict)

    def record(self, report: pytest.TestReport) -> None:
        cell = getattr(report, "gpucheck_cell", None)
        if not cell:
            return
        # One outcome per test: the call phase, or setup when it failed/skipped,
        # or teardown when only it failed.
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = report.outcome
        elif report.when == "teardown" and report.failed:
            outcome = "failed"
        else:
            return
        key = (cell["family"], cell["backend"])
        self.counts[key][outcome] += 1
        if outcome == "skipped" and isinstance(report.longrepr, tuple):
            self.skip_reasons.setdefault(key, str(report.longrepr[2]).removeprefix("Skipped: "))

    @property
    def families(self) -> list[str]:
        return sorted({family for family, _ in self.counts})

    def backends(self, order: list[str]) -> list[str]:
        present = {backend for _, backend in self.counts}
        return [name for name in order if name in present] + sorted(present - set(order))

    def summary(self, family: str, backend: str) -> str:
        """``5 passed``, ``2 failed / 3 passed``, ``skipped``, or ``-``."""
        counts = self.counts.get((family, backend))
        if not counts:
            return "-"
        if counts["failed"]:
            return f"FAIL {counts['failed']}/{sum(counts.values())}"
        if counts["passed"]:
            extra = f" +{counts['skipped']}s" if counts["skipped"] else ""
            return f"ok {counts['passed']}{extra}"
        reason = self.skip_reasons.get((family, backend), "")
        return "n/a" if reason.startswith("not applicable") else "skip"

    def to_json(self, order: list[str]) -> dict[str, Any]:
        cells = []
        for (family, backend), counts in sorted(self.counts.items()):
            cells.append(
                {
                    "family": family,
                    "backend": backend,
                    **{outcome: counts[outcome] for outcome in OUTCOMES},
                    "status": _status(counts),
                    "skip_reason": self.skip_reasons.get((family, backend), ""),
                }
            )
        return {
            "format": "pytest-gpucheck/report/v1",
            "backends": self.backends_info,
            "families": self.families,
            "backend_order": self.backends(order),
            "cells": cells,
            "sections": {name: section.data for name, section in self.sections.items()},
        }

    def to_markdown(self, order: list[str]) -> str:
        backends = self.backends(order)
        lines = ["## GPU conformance matrix", ""] if self.counts or self.backends_info else []
        if self.backends_info:
            lines += ["| backend | version | device / reason |", "| --- | --- | --- |"]
            for name, info in self.backends_info.items():
                where = info.get("device") or f"skipped: {info.get('reason', '')}"
                lines.append(f"| {name} | {info.get('version', '')} | {where} |")
            lines.append("")
        if backends:
            lines.append("| family | " + " | ".join(backends) + " |")
            lines.append("| --- |" + " --- |" * len(backends))
            for family in self.families:
                row = [_markdown_cell(self.summary(family, b)) for b in backends]
                lines.append(f"| {family} | " + " | ".join(row) + " |")
        for section in self.sections.values():
            lines += ["", section.markdown.rstrip()]
        return "\n".join(lines) + "\n"

    def terminal_lines(self, order: list[str]) -> list[str]:
        backends = self.backends(order)
        if not backends:
            return []
        width = max([len("family"), *map(len, self.families)])
        cols = [max(len(b), 10) for b in backends]
        header = (
            "family".ljust(width)
            + "  "
            + "  ".join(b.ljust(c) for b, c in zip(backends, cols, strict=False))
        )
        lines = [header]
        for family in self.families:
            cells = [self.summary(family, b).ljust(c) for b, c in zip(backends, cols, strict=False)]
            lines.append(family.ljust(width) + "  " + "  ".join(cells))
        lines.extend(self._skip_lines(backends))
        return lines

    def _skip_lines(self, backends: list[str]) -> list[str]:
        """Why each all-skipped cell was skipped; one line per backend when one reason covers it."""
        lines = []
        for backend in backends:
            families = [f for f in self.families if (f, backend) in self.counts]
            skipped = {
                family: self.skip_reasons.get((family, backend), "")
                for family in families
                if not self.counts[(family, backend)]["passed"]
                and not self.counts[(family, backend)]["failed"]
            }
            if not skipped:
                continue
            if len(skipped) == len(families) and len(set(skipped.values())) == 1:
                lines.append(f"  {backend} skipped: {next(iter(skipped.values()))}")
                continue
            lines.extend(
                f"  {backend} skipped in {family}: {reason}" for family, reason in skipped.items()
            )
        return lines


def _status(counts: Counter[str]) -> str:
    if counts["failed"]:
        return "fail"
    return "pass" if counts["passed"] else "skip"


def _markdown_cell(summary: str) -> str:
    if summary.startswith("FAIL"):
        return f"❌ {summary}"
    if summary.startswith("ok"):
        return f"✅ {summary}"
    return summary


def get_matrix(config: pytest.Config) -> Matrix:
    """The run's matrix (created on first use)."""
    if MATRIX_KEY not in config.stash:
        config.stash[MATRIX_KEY] = Matrix()
    return config.stash[MATRIX_KEY]


def add_section(
    config: pytest.Config,
    key: str,
    json_data: Any,
    markdown_text: str,
    terminal_lines: list[str] | None = None,
) -> None:
    """Add a feature's own section (``key``) to the terminal summary and ``--gpu-report``."""
    get_matrix(config).sections[key] = Section(json_data, markdown_text, list(terminal_lines or []))


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader never sees a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)


def write_report(matrix: Matrix, path: Path, order: list[str]) -> None:
    """Write the matrix as JSON or Markdown, chosen by ``path``'s extension."""
    if path.suffix == ".json":
        text = json.dumps(matrix.to_json(order), indent=2, sort_keys=True) + "\n"
    else:
        text = matrix.to_markdown(order)
    write_atomically(path, text)
