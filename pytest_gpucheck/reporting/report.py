"""The conformance matrix: backend x test family, in the terminal and as JSON/Markdown.

Each test report carries its cell (``report.gpucheck_cell``, a dict of
strings), set from the item when the report is made, so the matrix is also
right under pytest-xdist and for items run in a child process: those reports
are serialized with their attributes and rebuilt in this process.

One vocabulary everywhere (terminal, Markdown, JSON, job summary):

* ``pass`` -- the item ran and passed;
* ``fail`` -- it ran and failed (each failure is listed with its id, a one-line
  reason and the command that reruns it);
* ``skip`` -- it could not run here, with the reason (a backend that is not
  available, no implementation registered, ...);
* ``xfail`` -- it ran and failed as expected, with the reason (pytest's ``xfail``,
  ``gpu_xfail``, a clause an implementation declares it fails, a known framework defect);
* ``n/a`` -- the backend cannot express the kernel (``not_applicable``), with
  the reason.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import subprocess
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.hookspecs import ReportSection
from pytest_gpucheck.reporting.atomic_files import write_text_atomically
from pytest_gpucheck.reporting.terminal_width import fit

CELL_KEY = pytest.StashKey[dict[str, str]]()
MATRIX_KEY = pytest.StashKey["Matrix"]()
#: Outcomes of an item in the matrix, in the order they are shown.
STATUSES = ("pass", "fail", "xfail", "skip", "n/a")
REPORT_FORMAT = "pytest-gpucheck/report/v2"
NOT_APPLICABLE_PREFIX = "not applicable"
#: The reason an expected failure (pytest's xfail, ``gpu_xfail``) counts under: ``xfail (why)``.
XFAIL = "xfail"
#: A failure's reason is cut here: the full message is in the test log.
REASON_WIDTH = 240

LEGEND = (
    "pass N: N items passed | fail F/N: F of N items run failed (listed with rerun "
    "commands) | +K xfail: K items failed as expected (reasons listed) | +K skip, +K n/a: K "
    "more items did not run (reasons listed) | skip: "
    "could not run here | n/a: the backend cannot express the kernel | -: no such test"
)


#: Items that are no conformance check (a benchmark): no cell, even with a ``gpu_backend``.
OUT_OF_MATRIX_KEY = pytest.StashKey[bool]()


def leave_out_of_matrix(item: pytest.Item) -> None:
    """Give ``item`` no cell: a benchmark measures, it checks nothing the matrix could show
    (a benchmark-only run printed a "conformance matrix" with a row of its test file)."""
    item.stash[OUT_OF_MATRIX_KEY] = True


def set_cell(item: pytest.Item, *, backend: str, family: str) -> None:
    """Put ``item`` in the matrix at (``family``, ``backend``)."""
    item.stash[CELL_KEY] = {"backend": backend, "family": family}


def cell_of(item: pytest.Item) -> dict[str, str] | None:
    """The item's cell: set explicitly, or derived from its ``gpu_backend`` parameter."""
    cell = item.stash.get(CELL_KEY, None)
    if cell is not None:
        return cell
    if item.stash.get(OUT_OF_MATRIX_KEY, False):
        return None
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("gpu_backend") is None:
        return None
    marker = item.get_closest_marker("gpu_family")
    family = str(marker.args[0]) if marker and marker.args else _module_family(item)
    return {"backend": str(callspec.params["gpu_backend"]), "family": family}


def _module_family(item: pytest.Item) -> str:
    stem = item.path.stem
    return stem.removeprefix("test_").removesuffix("_test")


@dataclass(frozen=True)
class Failure:
    """One failing item: what failed, why (one line), how to rerun it, where to look."""

    nodeid: str
    reason: str
    rerun: str
    #: ``when`` of the failing report: setup, call or teardown.
    phase: str
    backend: str = ""
    family: str = ""
    #: Absolute path and 1-based line of the code to blame: the user's registered
    #: implementation when the item checks one, else the test function.
    file: str = ""
    line: int = 0
    #: What pytest's short test summary line shows of the failure after its node id (see
    #: :func:`pytest_message`; "" when nothing useful): the terminal then gives only what
    #: pytest lacks.  Not in the JSON report (a fact about the terminal, not the run).
    pytest_message: str = field(default="", compare=False)


#: A first line that names the exception and nothing else (``AssertionError:``).
_EXCEPTION_NAME_ONLY = re.compile(r"[A-Za-z_][\w.]*:")


def one_line_reason(report: pytest.TestReport) -> str:
    """The first line of the failure's message (``AssertionError: out differs ...``); a
    message that starts on a new line gives its first non-empty line after the type."""
    longrepr = report.longrepr
    crash: Any = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        text = str(crash.message)
    elif isinstance(longrepr, tuple):
        text = str(longrepr[2])
    else:  # a plain string (a child process that died, the benchmark gate)
        text = str(longrepr or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[0] if lines else f"failed in {report.when}"
    if len(lines) > 1 and _EXCEPTION_NAME_ONLY.fullmatch(reason):
        # The message starts on a new line (numpy.testing's assertions): pytest's first
        # line is the bare "AssertionError:", so the message's first line follows it.
        reason = f"{reason} {lines[1]}"
    if report.when != "call":
        reason = f"error in {report.when}: {reason}"
    if len(reason) > REASON_WIDTH:
        reason = reason[: REASON_WIDTH - 3] + "..."
    return reason


def pytest_message(report: pytest.TestReport) -> str:
    """The first line of the crash message, which pytest's short test summary line
    (``FAILED id - message``) shows; "" when that line says nothing: no crash message,
    an empty one, or the bare exception name (numpy.testing's ``AssertionError:``, whose
    message starts on the next line).  A plain-string report (a child process that died,
    the benchmark gate) has no crash message: pytest before 9 shows none for it."""
    crash: Any = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return ""
    first = str(crash.message or "").split("\n", 1)[0].strip()
    return "" if _EXCEPTION_NAME_ONLY.fullmatch(first) else first


def rerun_command(report: pytest.TestReport, backend: str, options: tuple[str, ...],
                  config: pytest.Config | None = None) -> str:
    """The command that reruns a failed item from the folder pytest ran in.

    A conformance failure prints its own ``rerun:`` line (the harness knows the
    user's paths, options, hypothesis seed and profile): that line is used as
    it is, so the report and the traceback never disagree.  Otherwise
    ``pytest TARGET --gpu-backends=BACKEND [options]``, where the target
    (``report.gpucheck_rerun``) comes from the same rule as the harness's line,
    :func:`pytest_gpucheck.reporting.ci.rerun_selector`: ``path::name``, or for the
    bundled suites under ``--gpu-conformance`` (whose node ids name no file the
    user has) the user's paths and ``-k 'TEST[ID]'``.  A report made without its item
    (``config`` given) is selected from its node id
    (:func:`pytest_gpucheck.reporting.ci.target_from_nodeid`).
    """
    # A crash is a plain string whose tail is the dead child's output, where another
    # item's rerun line may stand: only a check's own message is read.
    if not isinstance(report.longrepr, str):
        for line in reversed(report.longreprtext.splitlines()):
            if "rerun: pytest " in line:
                return line.split("rerun: ", 1)[1].strip()
    from pytest_gpucheck.reporting import rerun as ci

    target = getattr(report, "gpucheck_rerun", None)
    if not target:
        # A report made without its item (pytest-xdist's, for a worker that crashed).
        target = ci.target_from_nodeid(report.nodeid, config) if config is not None \
            else [report.nodeid]
    parts = ["pytest", *target]
    if backend:
        parts.append(f"--gpu-backends={backend}")
    parts.extend(ci.options_for(target, options))
    return " ".join(shlex.quote(part) for part in parts)


@dataclass
class Matrix:
    """Outcome counts per (family, backend), failures, skip reasons and extra sections."""

    counts: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    #: (family, backend) -> reason -> how many skip / n/a items gave it.
    skip_reasons: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    failures: list[Failure] = field(default_factory=list)
    #: The features' own parts (``pytest_gpucheck_report_sections``), by key.
    sections: dict[str, ReportSection] = field(default_factory=dict)
    backends_info: dict[str, dict[str, str]] = field(default_factory=dict)
    #: When, where and with what the run was made (see :func:`run_facts`).
    run: dict[str, Any] = field(default_factory=dict)
    #: Options a rerun needs besides the node id (``--gpu-conformance`` ...).
    rerun_options: tuple[str, ...] = ()
    #: The run's config (where a report without its item finds the user's folder).
    config: pytest.Config | None = field(default=None, repr=False, compare=False)
    #: The run had items of the plugin's (its fixtures, markers, suites, benchmarks): only
    #: then does it get the plugin's end-of-run output unasked.
    ours: bool = False

    def record(self, report: pytest.TestReport) -> None:
        """Count ``report`` once per item: its call, or setup when it did not pass, or a
        failing teardown; keep the failure of any item, in the matrix or not."""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = report.outcome
        elif report.when == "teardown" and report.failed:
            outcome = "failed"
        else:
            return
        cell = getattr(report, "gpucheck_cell", None) or {}
        backend, family = cell.get("backend", ""), cell.get("family", "")
        if outcome == "failed":
            where = getattr(report, "gpucheck_where", None) or {}
            self.failures.append(Failure(
                nodeid=report.nodeid, reason=one_line_reason(report),
                rerun=rerun_command(report, backend, self.rerun_options, self.config),
                phase=report.when,
                backend=backend, family=family, file=str(where.get("file", "")),
                line=int(where.get("line", 0) or 0),
                pytest_message=pytest_message(report)))
        if not cell:
            return
        key = (family, backend)
        status = {"passed": "pass", "failed": "fail", "skipped": "skip"}[outcome]
        if status == "skip":
            reason = _skip_reason(report)
            if reason.startswith(NOT_APPLICABLE_PREFIX):
                status = "n/a"
            elif _is_xfail(reason):
                status = "xfail"
            self.skip_reasons[key][reason] += 1
        self.counts[key][status] += 1

    def add(self, section: ReportSection) -> None:
        """Add (or, for a key already present, replace) a feature's section."""
        self.sections[section.key] = section

    @property
    def families(self) -> list[str]:
        return sorted({family for family, _ in self.counts})

    def backends(self, order: list[str]) -> list[str]:
        present = {backend for _, backend in self.counts}
        return [name for name in order if name in present] + sorted(present - set(order))

    def totals(self) -> dict[str, int]:
        """Items per status over the whole matrix, and failures outside it."""
        total: Counter[str] = Counter()
        for counts in self.counts.values():
            total.update(counts)
        result = {status: total[status] for status in STATUSES}
        result["items"] = sum(result.values())
        result["failures_listed"] = len(self.failures)
        return result

    def status(self, family: str, backend: str) -> str:
        """The cell's status: fail if any item failed, pass if any passed, else n/a or skip."""
        counts = self.counts.get((family, backend), Counter())
        if counts["fail"]:
            return "fail"
        if counts["pass"]:
            return "pass"
        if counts["xfail"]:
            return "xfail"
        if counts["n/a"] and not counts["skip"]:
            return "n/a"
        return "skip" if counts["skip"] else "-"

    def summary(self, family: str, backend: str) -> str:
        """``pass 5``, ``pass 5 +4 skip``, ``pass 2 +1 xfail``, ``fail 2/5``, ``xfail 1``,
        ``skip``, ``n/a`` or ``-``."""
        counts = self.counts.get((family, backend))
        if not counts:
            return "-"
        status = self.status(family, backend)
        ran = counts["pass"] + counts["fail"]
        if status in ("pass", "fail", "xfail"):
            text = (f"pass {counts['pass']}" if status == "pass" else
                    f"fail {counts['fail']}/{ran}" if status == "fail" else
                    f"xfail {counts['xfail']}")
            for other in ("xfail", "skip", "n/a"):
                if other == status:
                    continue
                if counts[other]:
                    text += f" +{counts[other]} {other}"
            return text
        return status

    def to_json(self, order: list[str]) -> dict[str, Any]:
        cells = []
        for (family, backend), counts in sorted(self.counts.items()):
            cells.append(
                {
                    "family": family,
                    "backend": backend,
                    **{status: counts[status] for status in STATUSES},
                    "status": self.status(family, backend),
                    "summary": self.summary(family, backend),
                    "skip_reasons": dict(self.skip_reasons.get((family, backend), {})),
                }
            )
        return {
            "format": REPORT_FORMAT,
            "legend": LEGEND,
            "run": self.run,
            "totals": self.totals(),
            "failures": [_failure_json(failure) for failure in self.failures],
            "backends": self.backends_info,
            "families": self.families,
            "backend_order": self.backends(order),
            "cells": cells,
            "sections": {name: section.data for name, section in self.sections.items()},
        }

    def headline(self, *, terminal: bool = False) -> str:
        """``gpucheck: 2 fail, 310 pass, 12 skip, 4 n/a`` (the matrix's totals).

        In the terminal it says what it counts: pytest's own totals follow it and
        differ (they count every test, the matrix only the items in its cells).
        """
        totals = self.totals()
        parts = [f"{totals[status]} {status}" for status in ("fail", "pass", "xfail", "skip",
                                                             "n/a")
                 if totals[status]]
        outside = totals["failures_listed"] - totals["fail"]
        if outside > 0:
            parts.insert(0, f"{outside} fail outside the matrix")
        line = "gpucheck: " + (", ".join(parts) if parts else "no items")
        if terminal:
            line += " (items in the matrix's cells; pytest's line below counts every test)"
        return line

    def matrix_markdown(self, order: list[str]) -> list[str]:
        backends = self.backends(order)
        if not backends:
            return []
        lines = ["| family | " + " | ".join(backends) + " |",
                 "| --- |" + " --- |" * len(backends)]
        for family in self.families:
            row = [_markdown_cell(self.summary(family, b), self.status(family, b))
                   for b in backends]
            lines.append(f"| {family} | " + " | ".join(row) + " |")
        return lines

    def failures_markdown(self, limit: int | None = None) -> list[str]:
        if not self.failures:
            return []
        shown = self.failures if limit is None else self.failures[:limit]
        lines = [f"### Failures ({len(self.failures)})", ""]
        for failure in shown:
            lines.append(f"- ❌ `{failure.nodeid}`: {_escape_markdown(failure.reason)}")
            lines.append(f"  rerun: `{failure.rerun}`")
        if len(shown) < len(self.failures):
            lines.append(f"- ... and {len(self.failures) - len(shown)} more in the full report")
        return [*lines, ""]

    def to_markdown(self, order: list[str]) -> str:
        lines = ["## GPU conformance matrix", "", self.headline(), ""]
        lines += self.failures_markdown()
        if self.run:
            lines += [_run_line(self.run), ""]
        if self.backends_info:
            lines += ["| backend | version | device / reason |", "| --- | --- | --- |"]
            for name, info in self.backends_info.items():
                where = info.get("device") or f"skip: {info.get('reason', '')}"
                lines.append(f"| {name} | {info.get('version', '')} | {where} |")
            lines.append("")
        matrix = self.matrix_markdown(order)
        if matrix:
            lines += [*matrix, "", f"Legend: {LEGEND}", ""]
        reasons = self.reason_lines(self.backends(order))
        if reasons:
            lines += ["Why items did not run:", "", *(f"- {line.strip()}" for line in reasons), ""]
        for section in self.sections.values():
            lines += [section.markdown.rstrip(), ""]
        return "\n".join(lines).rstrip() + "\n"

    def to_job_summary(self, order: list[str], max_failures: int = 20) -> str:
        """The CI page's version: headline, failures first, the matrix, the rest collapsed."""
        icon = "❌" if self.failures else "✅"
        lines = [f"## {icon} {self.headline()}", ""]
        lines += self.failures_markdown(max_failures)
        matrix = self.matrix_markdown(order)
        if matrix:
            lines += [*matrix, ""]
        details: list[tuple[str, list[str]]] = []
        reasons = self.reason_lines(self.backends(order))
        if reasons:
            details.append(("Why items did not run", [f"- {line.strip()}" for line in reasons]))
        for key, section in self.sections.items():
            if section.markdown.strip():
                details.append((_section_title(key, section.markdown),
                                section.markdown.rstrip().splitlines()))
        facts = []
        if self.run:
            facts.append(_run_line(self.run))
        if self.backends_info:
            facts += ["", "| backend | version | device / reason |", "| --- | --- | --- |"]
            for name, info in self.backends_info.items():
                where = info.get("device") or f"skip: {info.get('reason', '')}"
                facts.append(f"| {name} | {info.get('version', '')} | {where} |")
        if matrix:
            facts += ["", f"Legend: {LEGEND}"]
        if facts:
            details.append(("Run, versions and legend", facts))
        for title, body in details:
            lines += ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]
        return "\n".join(lines).rstrip() + "\n\n"

    def terminal_lines(self, order: list[str], width: int | None = None) -> list[str]:
        """The matrix, the reasons and the legend, fitted to ``width`` columns.

        A matrix wider than the terminal is split into tables of the backends
        that fit, each with the family column (a wrapped row would scramble its
        columns); reason and legend lines wrap with an indent.
        """
        every = self.backends(order)
        if not every:
            return []
        folded = self.folded_backends(every)
        backends = [b for b in every if b not in folded]
        first = max([len("family"), *map(len, self.families)])
        cols = {b: max(len(b), 10, *(len(self.summary(f, b)) for f in self.families))
                for b in backends}
        chunks: list[list[str]] = [[]]
        used = first
        for backend in backends:
            if chunks[-1] and width is not None and used + 2 + cols[backend] > width:
                chunks.append([])
                used = first
            chunks[-1].append(backend)
            used += 2 + cols[backend]
        lines: list[str] = []
        for number, chunk in enumerate(chunk for chunk in chunks if chunk):
            if number:
                lines.append("")
            lines.append(("family".ljust(first) + "  "
                          + "  ".join(b.ljust(cols[b]) for b in chunk)).rstrip())
            for family in self.families:
                cells = [self.summary(family, b).ljust(cols[b]) for b in chunk]
                lines.append((family.ljust(first) + "  " + "  ".join(cells)).rstrip())
        if folded:
            lines.append(fit(_folded_line(folded), width))
        lines.extend(fit(line, width) for line in self.reason_lines(backends))
        lines.append(fit(f"legend: {LEGEND}", width))
        return lines

    def folded_backends(self, backends: list[str]) -> dict[str, str]:
        """Backends that could not run here (their probe's reason in ``backends_info``) and
        skipped every item for that reason, with it: in the terminal their columns, all
        ``skip``, are folded into one line (on a CPU machine the five GPU backends'
        columns took 28 lines of an 80-column terminal)."""
        unavailable = {name: str(info.get("reason") or "")
                       for name, info in self.backends_info.items()}
        return {backend: reason for backend, family, reason, _ in self._reason_cells(backends)
                if family is None and reason == unavailable.get(backend)
                and all(self.status(f, backend) in ("skip", "-") for f in self.families)}

    def reason_lines(self, backends: list[str]) -> list[str]:
        """Why items did not run, each reason once with the cells it covers: a
        backend alone when that reason is all of its skip / n/a items, else
        ``backend in family (count)``."""
        grouped: dict[str, list[str]] = {}
        for backend, family, reason, count in self._reason_cells(backends):
            where = backend if family is None else f"{backend} in {family} ({count})"
            grouped.setdefault(reason, []).append(where)
        # An expected failure is its own line, `torch-cpu xfail (reason)`, not a skip.
        return [f"  {', '.join(cells)} {reason}" if _is_xfail(reason)
                else f"  {', '.join(cells)} {_label(reason)}: {reason}"
                for reason, cells in grouped.items()]

    def _reason_cells(self, backends: list[str]) -> list[tuple[str, str | None, str, int]]:
        """(backend, family or None for the whole backend, reason, items) in report order."""
        lines: list[tuple[str, str | None, str, int]] = []
        for backend in backends:
            per_family = {
                family: self.skip_reasons[(family, backend)]
                for family in self.families
                if self.skip_reasons.get((family, backend))
            }
            if not per_family:
                continue
            reasons = {reason for found in per_family.values() for reason in found}
            families = [f for f in self.families if (f, backend) in self.counts]
            whole = all(
                not self.counts[(f, backend)]["pass"] and not self.counts[(f, backend)]["fail"]
                for f in families
            )
            if len(reasons) == 1 and whole:
                reason = next(iter(reasons))
                lines.append((backend, None, reason, 0))
                continue
            for family, found in per_family.items():
                for reason, count in found.items():
                    lines.append((backend, family, reason, count))
        return lines

    def long_sections(self) -> list[ReportSection]:
        """The feature sections of more than one terminal line (the interop pair matrix,
        the benchmarks): printed before the conformance matrix, so the run ends with it."""
        return [section for section in self.sections.values()
                if sum(1 for line in section.terminal_lines if line.strip()) > 1]

    def lines_after_the_matrix(self, report_path: str | None = None) -> list[str]:
        """One line per feature section, after the matrix: a one-line section itself
        (the JAX compilations), a longer one a line pointing back to it (and to the
        report file, which holds it too)."""
        long = {id(section) for section in self.long_sections()}
        also = f" and in {report_path}" if report_path else ""
        lines: list[str] = []
        for key, section in self.sections.items():
            if id(section) in long:
                lines.append(f"gpucheck: {_section_title(key, section.markdown)}: above the "
                             f"matrix{also}")
            else:
                lines.extend(line for line in section.terminal_lines if line.strip())
        return lines

    def failure_lines(self, reportchars: str | None = None,
                      width: int | None = None) -> list[str]:
        """Terminal lines: what pytest's short test summary lacks of each failure.

        Each failure's ``rerun:`` command (its backend, seed and options: pytest's line
        has the node id alone), under one line saying what they are.  A failure whose
        reason pytest's summary does not show whole gets ``FAIL <id>: <reason>`` before its
        command: not listed by ``-r`` (whose characters are ``reportchars``; None: pytest's
        summary is not known to be printed), no message on pytest's line
        (:func:`pytest_message`), or one pytest cuts to its ``width`` columns (None: pytest
        shows it whole, as on CI or under ``-vv``).  A reason pytest shows whole is not
        repeated (pytest prints its summary after this block)."""
        if not self.failures:
            return []
        lines = ["gpucheck: the command that reruns each failure with its backend and "
                 "options:"]
        for failure in self.failures:
            word, kind = ("FAILED", "f") if failure.phase == "call" else ("ERROR", "E")
            shown = (reportchars is not None and kind in reportchars
                     and bool(failure.pytest_message)
                     and (width is None or len(f"{word} {failure.nodeid} - "
                                               f"{failure.pytest_message}") <= width))
            if not shown:
                lines.append(f"FAIL {failure.nodeid}: {failure.reason}")
            lines.append(f"  rerun: {failure.rerun}")
        return lines


def _failure_json(failure: Failure) -> dict[str, Any]:
    data = asdict(failure)
    data.pop("pytest_message")
    return data


def _folded_line(folded: dict[str, str]) -> str:
    """``  skip in every family (columns left out): numba-cuda, cupy: no NVIDIA driver``."""
    by_reason: dict[str, list[str]] = {}
    for backend, reason in folded.items():
        by_reason.setdefault(reason, []).append(backend)
    return "  skip in every family (columns left out): " + "; ".join(
        f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())


def _is_xfail(reason: str) -> bool:
    return reason == XFAIL or reason.startswith(f"{XFAIL} (")


def _label(reason: str) -> str:
    return "n/a" if reason.startswith(NOT_APPLICABLE_PREFIX) else "skip"


def _skip_reason(report: pytest.TestReport) -> str:
    """The one-line reason of a skip; an expected failure is a skip that says so."""
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        return f"{XFAIL} ({wasxfail})" if wasxfail else XFAIL
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    lines = str(report.longrepr or "").strip().splitlines()
    return lines[-1] if lines else "skipped"


def _markdown_cell(summary: str, status: str) -> str:
    icon = {"fail": "❌ ", "pass": "✅ "}.get(status, "")
    return f"{icon}{summary}"


def _escape_markdown(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _section_title(key: str, markdown: str) -> str:
    """The section's own heading (``## Interop matrix``) or its key."""
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return key.replace("_", " ")


def _run_line(run: dict[str, Any]) -> str:
    versions = ", ".join(f"{name} {version}" for name, version in run.get("versions", {}).items())
    commit = run.get("commit") or "unknown (not a git checkout)"
    return (f"Run at {run.get('timestamp', '?')} on {run.get('host', '?')}, commit {commit}; "
            f"{versions}")


def run_facts(rootpath: Path) -> dict[str, Any]:
    """When and on what the run was made: UTC timestamp, commit, host, versions."""
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": current_commit(rootpath),
        "host": platform.node(),
        "platform": platform.platform(),
        "versions": {
            "python": platform.python_version(),
            "pytest": pytest.__version__,
            "pytest-gpucheck": version("pytest-gpucheck"),
        },
    }


def current_commit(rootpath: Path) -> str:
    """The commit under test: the CI's variable (GitHub, GitLab), else ``git``, else ""."""
    for variable in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        if os.environ.get(variable):
            return os.environ[variable]
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=rootpath, capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def get_matrix(config: pytest.Config) -> Matrix:
    """The run's matrix (created on first use)."""
    if MATRIX_KEY not in config.stash:
        # The user's (--gpu-conformance, --gpu-impls, an explicit --gpu-isolate, -p, the
        # hypothesis options...), as every process of the run sees them.
        from pytest_gpucheck.reporting.rerun import rerun_options

        options = rerun_options(config)
        # The features' own (the benchmark gate's baseline and level), in the order the
        # plugins were registered.
        for feature_args in reversed(config.hook.pytest_gpucheck_rerun_args(config=config)):
            options.extend(feature_args or ())
        config.stash[MATRIX_KEY] = Matrix(rerun_options=tuple(options), config=config)
    return config.stash[MATRIX_KEY]


def add_section(
    config: pytest.Config,
    key: str,
    json_data: Any,
    markdown_text: str,
    terminal_lines: list[str] | None = None,
) -> None:
    """Add a section (``key``) to the terminal summary and ``--gpu-report`` while the run
    goes on; a plugin whose section sums up the run returns it from the
    ``pytest_gpucheck_report_sections`` hook instead (:mod:`pytest_gpucheck.hookspecs`)."""
    get_matrix(config).add(ReportSection(key, json_data, markdown_text,
                                         tuple(terminal_lines or ())))


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


def append_job_summary(matrix: Matrix, path: Path, order: list[str]) -> None:
    """Append the job-summary Markdown to ``path`` (GitHub's ``GITHUB_STEP_SUMMARY``) in
    one write, so earlier steps' content stays and a reader sees all of ours or none."""
    text = matrix.to_job_summary(order)
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(text)


__all__ = ["Failure", "Matrix", "add_section", "cell_of", "get_matrix", "set_cell"]
