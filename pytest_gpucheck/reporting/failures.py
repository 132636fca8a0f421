"""A failed item in the report: what failed, why in one line, and the command that
reruns it (:class:`Failure`, made by :meth:`pytest_gpucheck.reporting.report.Matrix.record`
from the item's failing report)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import pytest

#: A failure's reason is cut here: the full message is in the test log.
REASON_WIDTH = 240


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
