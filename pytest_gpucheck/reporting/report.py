"""The conformance matrix: backend x test family, and its lines in the terminal.

The report's files (JSON, Markdown, the job summary) are made from it in
:mod:`pytest_gpucheck.reporting.report_files`, a failure's one-line reason and rerun
command in :mod:`pytest_gpucheck.reporting.failures`, the run's facts (time, commit,
versions) in :mod:`pytest_gpucheck.run_summary`.

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

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_gpucheck.hookspecs import ReportSection
from pytest_gpucheck.reporting.failures import (
    Failure,
    one_line_reason,
    pytest_message,
    rerun_command,
)
from pytest_gpucheck.reporting.terminal_width import fit

CELL_KEY = pytest.StashKey[dict[str, str]]()
MATRIX_KEY = pytest.StashKey["Matrix"]()
#: Outcomes of an item in the matrix, in the order they are shown.
STATUSES = ("pass", "fail", "xfail", "skip", "n/a")
REPORT_FORMAT = "pytest-gpucheck/report/v2"
NOT_APPLICABLE_PREFIX = "not applicable"
#: The reason an expected failure (pytest's xfail, ``gpu_xfail``) counts under: ``xfail (why)``.
XFAIL = "xfail"

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
    #: When, where and with what the run was made
    #: (see :func:`pytest_gpucheck.run_summary.run_facts`).
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
                lines.append(f"gpucheck: {section_title(key, section.markdown)}: above the "
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


def section_title(key: str, markdown: str) -> str:
    """The section's own heading (``## Interop matrix``) or its key."""
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return key.replace("_", " ")


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


__all__ = ["Failure", "Matrix", "add_section", "cell_of", "get_matrix", "set_cell"]
