"""The report's files: ``--gpu-report`` as JSON or Markdown and the CI page's job
summary, each made from the run's :class:`~pytest_gpucheck.reporting.report.Matrix`
(the terminal's lines are the matrix's own) and written atomically."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_gpucheck.reporting.atomic_files import write_atomically
from pytest_gpucheck.reporting.failures import Failure
from pytest_gpucheck.reporting.report import (
    LEGEND,
    REPORT_FORMAT,
    STATUSES,
    Matrix,
    section_title,
)


def report_json(matrix: Matrix, order: list[str]) -> dict[str, Any]:
    """The JSON report (``REPORT_FORMAT``): totals, failures, backends, every cell."""
    cells = []
    for (family, backend), counts in sorted(matrix.counts.items()):
        cells.append(
            {
                "family": family,
                "backend": backend,
                **{status: counts[status] for status in STATUSES},
                "status": matrix.status(family, backend),
                "summary": matrix.summary(family, backend),
                "skip_reasons": dict(matrix.skip_reasons.get((family, backend), {})),
            }
        )
    return {
        "format": REPORT_FORMAT,
        "legend": LEGEND,
        "run": matrix.run,
        "totals": matrix.totals(),
        "failures": [_failure_json(failure) for failure in matrix.failures],
        "backends": matrix.backends_info,
        "families": matrix.families,
        "backend_order": matrix.backends(order),
        "cells": cells,
        "sections": {name: section.data for name, section in matrix.sections.items()},
    }


def matrix_markdown(matrix: Matrix, order: list[str]) -> list[str]:
    backends = matrix.backends(order)
    if not backends:
        return []
    lines = ["| family | " + " | ".join(backends) + " |",
             "| --- |" + " --- |" * len(backends)]
    for family in matrix.families:
        row = [_markdown_cell(matrix.summary(family, b), matrix.status(family, b))
               for b in backends]
        lines.append(f"| {family} | " + " | ".join(row) + " |")
    return lines


def failures_markdown(matrix: Matrix, limit: int | None = None) -> list[str]:
    if not matrix.failures:
        return []
    shown = matrix.failures if limit is None else matrix.failures[:limit]
    lines = [f"### Failures ({len(matrix.failures)})", ""]
    for failure in shown:
        lines.append(f"- ❌ `{failure.nodeid}`: {_escape_markdown(failure.reason)}")
        lines.append(f"  rerun: `{failure.rerun}`")
    if len(shown) < len(matrix.failures):
        lines.append(f"- ... and {len(matrix.failures) - len(shown)} more in the full report")
    return [*lines, ""]


def backends_markdown(matrix: Matrix) -> list[str]:
    """The backends' table: version, and the device or why the backend could not run."""
    lines = ["| backend | version | device / reason |", "| --- | --- | --- |"]
    for name, info in matrix.backends_info.items():
        where = info.get("device") or f"skip: {info.get('reason', '')}"
        lines.append(f"| {name} | {info.get('version', '')} | {where} |")
    return lines


def report_markdown(matrix: Matrix, order: list[str]) -> str:
    """The Markdown report: headline, failures, run facts, backends, matrix, reasons and
    the features' sections."""
    lines = ["## GPU conformance matrix", "", matrix.headline(), ""]
    lines += failures_markdown(matrix)
    if matrix.run:
        lines += [_run_line(matrix.run), ""]
    if matrix.backends_info:
        lines += [*backends_markdown(matrix), ""]
    table = matrix_markdown(matrix, order)
    if table:
        lines += [*table, "", f"Legend: {LEGEND}", ""]
    reasons = matrix.reason_lines(matrix.backends(order))
    if reasons:
        lines += ["Why items did not run:", "", *(f"- {line.strip()}" for line in reasons), ""]
    for section in matrix.sections.values():
        lines += [section.markdown.rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def job_summary(matrix: Matrix, order: list[str], max_failures: int = 20) -> str:
    """The CI page's version: headline, failures first, the matrix, the rest collapsed."""
    icon = "❌" if matrix.failures else "✅"
    lines = [f"## {icon} {matrix.headline()}", ""]
    lines += failures_markdown(matrix, max_failures)
    table = matrix_markdown(matrix, order)
    if table:
        lines += [*table, ""]
    details: list[tuple[str, list[str]]] = []
    reasons = matrix.reason_lines(matrix.backends(order))
    if reasons:
        details.append(("Why items did not run", [f"- {line.strip()}" for line in reasons]))
    for key, section in matrix.sections.items():
        if section.markdown.strip():
            details.append((section_title(key, section.markdown),
                            section.markdown.rstrip().splitlines()))
    facts = []
    if matrix.run:
        facts.append(_run_line(matrix.run))
    if matrix.backends_info:
        facts += ["", *backends_markdown(matrix)]
    if table:
        facts += ["", f"Legend: {LEGEND}"]
    if facts:
        details.append(("Run, versions and legend", facts))
    for title, body in details:
        lines += ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n\n"


def write_report(matrix: Matrix, path: Path, order: list[str]) -> None:
    """Write the matrix as JSON or Markdown, chosen by ``path``'s extension."""
    if path.suffix == ".json":
        text = json.dumps(report_json(matrix, order), indent=2, sort_keys=True) + "\n"
    else:
        text = report_markdown(matrix, order)
    write_atomically(path, text)


def append_job_summary(matrix: Matrix, path: Path, order: list[str]) -> None:
    """Append the job-summary Markdown to ``path`` (GitHub's ``GITHUB_STEP_SUMMARY``) in
    one write, so earlier steps' content stays and a reader sees all of ours or none."""
    text = job_summary(matrix, order)
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(text)


def _failure_json(failure: Failure) -> dict[str, Any]:
    data = asdict(failure)
    data.pop("pytest_message")
    return data


def _markdown_cell(summary: str, status: str) -> str:
    icon = {"fail": "❌ ", "pass": "✅ "}.get(status, "")
    return f"{icon}{summary}"


def _escape_markdown(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _run_line(run: dict[str, Any]) -> str:
    versions = ", ".join(f"{name} {version}" for name, version in run.get("versions", {}).items())
    commit = run.get("commit") or "unknown (not a git checkout)"
    return (f"Run at {run.get('timestamp', '?')} on {run.get('host', '?')}, commit {commit}; "
            f"{versions}")
