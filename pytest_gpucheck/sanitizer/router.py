"""The sanitizer's router (``--gpu-sanitize``): every item it claims runs once in the
worker of each tool, and the runs merge into one outcome (:func:`merge_runs`).

The feature (:mod:`pytest_gpucheck.sanitizer.plugin`) decides what is sanitized, with which
tools and executable, and runs the worker-side plugin; this module starts and talks to
the workers.  A :class:`SanitizedWorker` is a
:class:`~pytest_gpucheck.processes.pool.Worker` whose command starts with
``compute-sanitizer --tool TOOL --log-file LOG ...``; each start logs to a file of
its own.  The worker attributes what it reads to its tests
(:class:`pytest_gpucheck.sanitizer.plugin.SanitizedChild`); what is left in the log when
the worker ends is an error outside any test and fails the run, and when the
worker dies on a test, the sanitizer's last words join that test's failure.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from pytest_gpucheck.environment import SANITIZE_LOG_VARIABLE, SANITIZE_TOOL_VARIABLE
from pytest_gpucheck.processes import (
    KeepsChildDeaths,
    Router,
    Worker,
    backends_option,
    close_all,
    items_ahead,
    router_for,
    scratch_folder,
)
from pytest_gpucheck.sanitizer.log import (
    SECTION,
    device_errors,
    error_text,
    errors,
    read_mark,
    unread_part,
)
from pytest_gpucheck.selection import item_backends

#: Environment variables that turn the frameworks' device memory pools off in a
#: sanitized worker (a pool hands out slices of one big allocation, so an access past
#: an array's end that stays inside the pooled block is invisible to memcheck).
#: PyTorch: ``PYTORCH_NO_CUDA_MEMORY_CACHING`` (c10/cuda/CUDACachingAllocator.cpp reads
#: it; any value but ``0`` turns caching off).  JAX: ``XLA_PYTHON_CLIENT_ALLOCATOR=platform``
#: (allocate and free on demand, no arena).  CuPy has no variable: the worker calls
#: ``cupy.cuda.set_allocator(None)`` before its first CuPy test.  numba-cuda has no pool.
POOLS_OFF_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}


class SanitizedWorker(Worker):
    """A long-lived worker started under compute-sanitizer with one tool."""

    def __init__(self, config: pytest.Config, universe: Sequence[pytest.Item], *, tool: str,
                 executable: Path, what: str, extra_args: Sequence[str],
                 deaths: list[str], tool_args: Sequence[str] = ()) -> None:
        super().__init__(config, universe, what=what, extra_args=extra_args,
                         env=POOLS_OFF_ENV, deaths=deaths)
        self.tool = tool
        self.executable = executable
        self.tool_args = list(tool_args)
        self.logs: Path | None = None
        #: Whether a test of this worker process failed with this tool's finding (its
        #: lost context's failed API calls at exit are that finding again).
        self._failed_a_test = False

    @property
    def log(self) -> Path | None:
        return None if self.logs is None else self.logs / f"{self.tool}.log"

    def launcher_args(self) -> list[str]:
        return [str(self.executable), "--tool", self.tool, "--log-file", str(self.log),
                # every error of the session, not the first 100 only
                "--print-limit", "0",
                # pytest exits 1 when a test fails: that is no sanitizer finding
                "--check-exit-code", "no",
                # the worker only: a test's own subprocess would not be attributed
                "--target-processes", "application-only", *self.tool_args]

    def _start(self) -> None:
        self._finish_log()  # a worker that died between tests: what it left unread
        self.logs = scratch_folder("gpucheck-sanitizer-")
        self.env[SANITIZE_LOG_VARIABLE] = str(self.log)
        self.env[SANITIZE_TOOL_VARIABLE] = self.tool
        super()._start()

    def run(self, item: pytest.Item, *, nextitem: pytest.Item | None = None,
            ahead: Sequence[pytest.Item] = ()) -> list[pytest.TestReport]:
        reports = super().run(item, nextitem=nextitem, ahead=ahead)
        if any(report.failed and any(title == f"{SECTION} ({self.tool})"
                                     for title, _ in report.sections) for report in reports):
            self._failed_a_test = True
        log = self.log
        if self.process is None and log is not None and reports:
            # The worker died on this item: what the sanitizer said since the last test
            # is this item's (it was running).
            text = error_text(unread_part(log))
            if text:
                reports[-1].sections.append((f"{SECTION} ({self.tool})", text))
            self._remove_logs()
        return reports

    def close(self) -> None:
        super().close()
        self._finish_log()

    def _finish_log(self) -> None:
        """A worker's log after it ended: its unread findings are outside any test."""
        log = self.log
        if log is None:
            return
        unread = unread_part(log)
        text = error_text(unread)
        if text and self._failed_a_test and not device_errors(errors(unread)):
            # Only failed API calls (module unload, synchronize at exit) on a context that
            # a kernel this worker's tests were failed for had lost: that finding again
            # (seen on an H200 after the planted out-of-bounds read), not a new one.
            text = ""
        self._failed_a_test = False
        if text:
            self.deaths.append(
                f"compute-sanitizer ({self.tool}) reported errors outside any test "
                f"(start-up, module import, session teardown or exit) in "
                f"{self.what[0].lower()}{self.what[1:]}:\n{text}")
        self._remove_logs()

    def _remove_logs(self) -> None:
        if self.logs is not None:
            shutil.rmtree(self.logs, ignore_errors=True)
        self.logs = None
        with contextlib.suppress(KeyError):
            del self.env[SANITIZE_LOG_VARIABLE]


class SanitizerRouter(KeepsChildDeaths, Router):
    """Parent-side plugin: run each item it claims once in every tool's worker.

    The sanitizer feature (:mod:`pytest_gpucheck.sanitizer.plugin`) decides what is sanitized
    and how: it hands over its tools with their options, the executable, which items
    it claims and its key in an xdist worker's output."""

    kind = "sanitizer"

    def __init__(self, config: pytest.Config, *, tools: Sequence[tuple[str, list[str]]],
                 executable: Path, claims: Callable[[pytest.Item], bool],
                 deaths_output: str) -> None:
        self.config = config
        self.tools = list(tools)
        self.executable = executable
        self._claims = claims
        #: This router's key in an xdist worker's output (its children's deaths).
        self.DEATHS_OUTPUT = deaths_output
        self.workers: dict[tuple[str, ...], SanitizedWorker] = {}
        self.deaths: list[str] = []

    def claims(self, item: pytest.Item) -> bool:
        return self._claims(item)

    @staticmethod
    def _backends(item: pytest.Item) -> tuple[str, ...]:
        return tuple(sorted(item_backends(item)))

    def run(self, item: pytest.Item, nextitem: pytest.Item | None
            ) -> list[pytest.TestReport]:
        backends = self._backends(item)
        shared = next((other for other in items_ahead(item) if router_for(other) is self
                       and self._backends(other) == backends), None)
        runs: list[tuple[str, list[pytest.TestReport]]] = []
        for tool, tool_args in self.tools:
            key = (tool, *backends)
            worker = self.workers.get(key)
            if worker is None:
                universe = [other for other in item.session.items if router_for(other) is self
                            and self._backends(other) == backends]
                worker = self.workers[key] = SanitizedWorker(
                    self.config, universe, tool=tool, executable=self.executable,
                    tool_args=tool_args,
                    what=f"The sanitized worker ({tool}; {', '.join(backends)})",
                    extra_args=backends_option(self.config), deaths=self.deaths)
            runs.append((tool, worker.run(item, nextitem=shared)))
        return merge_runs(runs)

    def close_children(self) -> None:
        workers = list(self.workers.values())
        self.workers.clear()
        close_all(workers)


def merge_runs(runs: Sequence[tuple[str, list[pytest.TestReport]]]) -> list[pytest.TestReport]:
    """One item's reports from several tools' runs: the first run with a failure, else the
    first that did not skip, else the first; with the sanitizer sections of the other
    tools' failing runs added, so the item gets exactly one outcome and every tool's
    findings are shown."""
    def rank(reports: list[pytest.TestReport]) -> int:
        if any(r.failed for r in reports):
            return 0
        # A test skipped under one tool (a bug another tool reports) ran under another.
        return 2 if any(r.skipped for r in reports) else 1

    chosen_tool, chosen = min(runs, key=lambda run: rank(run[1]))
    extra = [(name, text) for tool, reports in runs if tool != chosen_tool
             for report in reports if report.failed
             for name, text in report.sections if name.startswith(SECTION)]
    if extra and chosen:
        target = next((r for r in chosen if r.failed), chosen[-1])
        target.sections.extend(extra)
    return chosen


__all__ = ["POOLS_OFF_ENV", "SanitizedWorker", "SanitizerRouter", "merge_runs", "read_mark"]
