"""The wire between a child and its parent: what travels, and how it is read back.

A child's report sink (:class:`~.worker.ReportSink`) writes, and the parent reads
with :func:`read_reports`, one JSON object a line in ``<sink>/rank-<r>.jsonl``.

What travels from a child to its parent, and how (one JSON object a line in
``<sink>/rank-<r>.jsonl``; the parent reads them with :func:`read_reports`):

- ``{"started": target}`` / ``{"finished": target}``: an item began / was logged
  to its end (the crash rules above);
- ``{"report": ..., "extra": ...}``: one test report, serialized by pytest's
  ``pytest_report_to_serializable``; captured sections, durations,
  ``user_properties`` (``record_property``) and the longrepr travel inside it.
  Per-item plugin data travel as plain report attributes named in
  :data:`REPORT_ATTRIBUTES` (``gpucheck_cell``, ``gpucheck_target``,
  ``gpucheck_bench``, ``gpucheck_benchmarks``...), set on the rebuilt report;
- ``{"warning": ...}``: a warning recorded while an item ran (pytest records
  them after the item's reports); the parent attaches it to the item's last
  report as ``gpucheck_warnings`` and :func:`~.replaying.replay` records it in this session
  (``pytest_warning_recorded``), so it reaches the warnings summary;
- ``{"session": {...}}``: the child's session output, written once at its
  session end (as pytest-xdist's ``workeroutput``): ``testsuite_properties``
  (``record_testsuite_property``) and whatever a plugin put in
  :attr:`ReportSink.output`; the parent applies it with :func:`~.replaying.apply_session_output`.

A long-lived worker (:class:`~.pool.Worker`) is also sent the items to run, one JSON
request a line on a pipe (``{"run": target, "next": target, "ahead": [...]}``), and
answers each (``{"done": target, "poisoned": ...}`` or ``{"missing": target}``).
An item is named on the wire by :func:`child_target`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: ``<sink>/fault-rank-<r>.txt``: faulthandler's dump of a fatal error on rank r.
FAULT_PREFIX = "fault-rank-"


#: Per-item plugin data: report attributes the child copies into each serialized
#: report and the parent sets on the rebuilt one (a plugin appends its own name).
REPORT_ATTRIBUTES = ["gpucheck_cell", "gpucheck_target", "gpucheck_ours"]


#: Name of the item server plugin in a long-lived worker (:class:`~.worker.ItemServer`).
ITEM_SERVER = "gpucheck-item-server"


def current_rank(env: Mapping[str, str] | None = None) -> int:
    """This process's rank under a launcher, from its environment (0 without one)."""
    from pytest_gpucheck.environment import launched_rank

    launched = launched_rank(env)
    return launched.rank if launched is not None else 0


def child_target(item: pytest.Item) -> str:
    """The command-line argument that selects exactly ``item`` from any directory."""
    _, _, suffix = item.nodeid.partition("::")
    return f"{item.path}::{suffix}" if suffix else str(item.path)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def read_reports(
    config: pytest.Config, sink: str, targets: Mapping[str, str], run: ChildRun,
    offsets: dict[str, int] | None = None,
) -> None:
    """Add what the child wrote to ``run``; with ``offsets`` (file name -> bytes read),
    only what it wrote since the last call (a long-lived worker's files grow)."""
    for path in sorted(Path(sink).glob("rank-*.jsonl")):
        rank = int(path.stem.removeprefix("rank-"))
        reports = run.reports.setdefault(rank, [])
        started = run.started.setdefault(rank, [])
        ended = run.ended.setdefault(rank, [])
        with path.open("rb") as handle:
            handle.seek(offsets.get(path.name, 0) if offsets is not None else 0)
            data = handle.read()
        if offsets is not None:
            # A line still being written is read next time, whole.
            data = data[: data.rfind(b"\n") + 1]
            offsets[path.name] = offsets.get(path.name, 0) + len(data)
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a rank killed mid-write leaves a partial last line
            if "started" in entry or "finished" in entry:
                nodeid = targets.get(entry.get("started") or entry.get("finished") or "")
                if nodeid is not None:
                    (started if "started" in entry else ended).append(nodeid)
                continue
            if "warning" in entry:
                _attach_warning(reports, targets, entry["warning"])
                continue
            if "session" in entry:
                if rank == 0:  # every rank ran the same tests: one rank's output counts
                    run.session_output.update(entry["session"])
                continue
            report = config.hook.pytest_report_from_serializable(
                config=config, data=entry["report"]
            )
            if report is None:
                continue
            if isinstance(report.longrepr, list):
                # A skip's (path, lineno, reason) tuple comes back from JSON as a list.
                report.longrepr = tuple(report.longrepr)
            extra = entry.get("extra") or {}
            for name, value in extra.items():
                if value is not None and name != "gpucheck_target":
                    setattr(report, name, value)
            nodeid = targets.get(extra.get("gpucheck_target") or "")
            if nodeid is not None:
                report.nodeid = nodeid
            reports.append(report)
    for path in sorted(Path(sink).glob(f"{FAULT_PREFIX}*.txt")):
        text = read_text(path).strip()
        if text:
            run.faults[int(path.stem.removeprefix(FAULT_PREFIX))] = text


def _attach_warning(reports: Sequence[Any], targets: Mapping[str, str],
                    warning: dict[str, Any]) -> None:
    """Keep a warning of an item on that item's last report read so far (its teardown:
    pytest records an item's warnings after logging its reports)."""
    nodeid = targets.get(str(warning.get("target")))
    for report in reversed(reports):
        if isinstance(report, pytest.TestReport) and report.nodeid == nodeid:
            report.gpucheck_warnings = [  # type: ignore[attr-defined]
                *getattr(report, "gpucheck_warnings", []), warning]
            return


def warning_message(data: Mapping[str, Any]) -> warnings.WarningMessage:
    """A child's warning, rebuilt as the record ``warnings.catch_warnings`` would make."""
    category: type[Warning] = UserWarning
    module, _, name = str(data.get("category", "")).partition(":")
    with contextlib.suppress(Exception):  # a category that cannot be imported here
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
        if isinstance(found, type) and issubclass(found, Warning):
            category = found
    text = str(data.get("message", ""))
    try:
        message: Warning | str = category(text)
    except Exception:  # a category whose constructor wants other arguments
        message = text
    return warnings.WarningMessage(message, category, str(data.get("filename", "")),
                                   int(data.get("lineno", 0)))


class SuiteProperties:
    """A child's stand-in for pytest's ``LogXML``: keeps ``record_testsuite_property``'s
    properties for the parent, which writes them into its junit file."""

    def __init__(self, properties: list[list[str]], family: str) -> None:
        self.properties = properties
        self.family = family

    def add_global_property(self, name: str, value: object) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name parameter needs to be a string, but {type(name).__name__} "
                            "given")  # pytest's own check and message
        self.properties.append([name, str(value)])

    def node_reporter(self, report: object) -> Any:
        raise RuntimeError("record_xml_attribute does not travel from a child process of "
                           "pytest-gpucheck: use record_property, or --gpu-isolate=none")


@dataclass
class ChildRun:
    """What a child pytest produced."""

    returncode: int
    output: str
    timed_out: bool
    reports: dict[int, list[Any]] = field(default_factory=dict)  # rank -> TestReport/CollectReport
    #: rank -> node ids (this session's) of the items that rank started, in order.
    started: dict[int, list[str]] = field(default_factory=dict)
    #: rank -> node ids of the items that rank finished (logged to the end).
    ended: dict[int, list[str]] = field(default_factory=dict)
    #: rank -> faulthandler's dump of a fatal error on that rank ("" if none).
    faults: dict[int, str] = field(default_factory=dict)
    interrupted: bool = False
    #: The session output of rank 0 (see the module docstring), once the child's session ended.
    session_output: dict[str, Any] = field(default_factory=dict)

    def for_nodeid(self, nodeid: str) -> dict[int, list[pytest.TestReport]]:
        """Per rank, the test reports of ``nodeid`` (setup, call, teardown)."""
        return {
            rank: [r for r in reports if isinstance(r, pytest.TestReport) and r.nodeid == nodeid]
            for rank, reports in self.reports.items()
        }

    def started_ranks(self, nodeid: str) -> list[int]:
        """The ranks that started ``nodeid``."""
        return sorted(rank for rank, ids in self.started.items() if nodeid in ids)

    def finished(self, nodeid: str) -> bool:
        """Whether some rank logged ``nodeid`` to its end (the child wrote a ``finished``
        line, or at least its teardown report)."""
        return any(nodeid in ids for ids in self.ended.values()) or any(
            r.when == "teardown" for reports in self.for_nodeid(nodeid).values() for r in reports
        )

    @property
    def died(self) -> bool:
        """The child ended abnormally: a signal, a timeout, or an exit code pytest never uses
        for a finished run."""
        return self.timed_out or self.returncode not in NORMAL_EXIT_CODES

    @property
    def collect_errors(self) -> list[Any]:
        return [
            r
            for reports in self.reports.values()
            for r in reports
            if isinstance(r, pytest.CollectReport)
        ]


#: Exit codes of a pytest child that finished normally (tests passed / failed).
NORMAL_EXIT_CODES = (0, 1)
