"""The worker side: what runs inside a child pytest the plugin started.

Registered by the plugin's ``pytest_configure`` when the child's environment says it
is one (:func:`install_report_sink`): the report sink that sends every report to the
parent (:mod:`.wire`), the live output stream under the parent's ``-s``, the orphan
guard (:mod:`.guard`), and in a long-lived worker the item server, which runs the items
its parent names one at a time and checks a backend's health after a failed item.
:func:`load_parent_conftests` loads the parent's ``conftest.py`` files before the
child collects.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.environment import (
    CONFTESTS_VARIABLE,
    JUNIT_VARIABLE,
    REPORT_SINK_VARIABLE,
    SERVE_VARIABLE,
    STREAM_VARIABLE,
)
from pytest_gpucheck.processes.guard import start_orphan_guard
from pytest_gpucheck.processes.wire import (
    FAULT_PREFIX,
    ITEM_SERVER,
    REPORT_ATTRIBUTES,
    SuiteProperties,
    child_target,
    current_rank,
)


class ReportSink:
    """Child-side plugin: append every serialized report to ``<sink>/rank-<r>.jsonl``.

    Before an item runs, a ``started`` line names it, so the parent can tell
    the item that was running when the process died from the items it never
    reached.  A fatal error (segfault, ``abort()``, a fatal Python error) is
    dumped by :mod:`faulthandler`, every thread, into
    ``<sink>/fault-rank-<r>.txt``; the parent shows it whole.
    """

    def __init__(self, config: pytest.Config, directory: Path) -> None:
        self.config = config
        rank = current_rank()
        self.path = directory / f"rank-{rank}.jsonl"
        self._handle = self.path.open("a", encoding="utf-8")
        self._targets: dict[str, str] = {}
        self._by_nodeid: dict[str, str] = {}
        #: The session output (plain JSON data) the parent reads at this child's end,
        #: as pytest-xdist's ``workeroutput``; a plugin may add its own keys.
        self.output: dict[str, Any] = {}
        # Kept open for the life of the process: faulthandler writes to its
        # descriptor from the signal handler.  pytest's faulthandler plugin
        # enabled it on stderr earlier in pytest_configure; this takes over.
        self._fault_file = (directory / f"{FAULT_PREFIX}{rank}.txt").open("w", encoding="utf-8")
        faulthandler.enable(file=self._fault_file, all_threads=True)

    def _line(self, entry: dict[str, Any]) -> None:
        self._handle.write(json.dumps(entry) + "\n")
        self._handle.flush()

    def _write(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        if data is None:
            return
        extra = {name: getattr(report, name, None) for name in REPORT_ATTRIBUTES}
        self._line({"report": data, "extra": extra})

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str) -> None:
        # Only an item's warnings: the parent collected the same files and recorded the
        # collection's and configuration's warnings itself.
        target = self._by_nodeid.get(nodeid)
        if when != "runtest" or target is None:
            return
        category = warning_message.category
        self._line({"warning": {
            "target": target,
            "message": str(warning_message.message),
            "category": f"{category.__module__}:{category.__qualname__}",
            "filename": str(warning_message.filename),
            "lineno": int(warning_message.lineno or 0),
        }})

    def pytest_sessionstart(self) -> None:
        # record_testsuite_property writes into the session's LogXML; a child has
        # none (the parent writes the junit file), so it gets a recorder whose
        # properties travel in the session output.
        from _pytest.junitxml import xml_key  # private: the fixture reads this key

        family = os.environ.get(JUNIT_VARIABLE)
        if family and self.config.stash.get(xml_key, None) is None:
            self.config.stash[xml_key] = SuiteProperties(  # type: ignore[assignment,misc]
                self.output.setdefault("testsuite_properties", []), family)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        self._line({"session": self.output})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self._targets = {item.nodeid: child_target(item) for item in items}
        self._by_nodeid = dict(self._targets)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        target = self._targets.get(nodeid)
        if target is not None:
            self._line({"started": target})

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        # Not every finished item has a teardown report: one replayed by a
        # router (a spawned MPI job that failed as a whole) may have a call only.
        target = self._targets.get(nodeid)
        if target is not None:
            self._line({"finished": target})

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # The parent names items by target, not node id: ids of files outside
        # the rootdir depend on how each process was invoked.
        report.gpucheck_target = child_target(item)  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._write(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._write(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        # The stand-in was never registered as a plugin: pytest's junitxml would try to
        # unregister it at its own unconfigure and fail the child's exit.
        from _pytest.junitxml import xml_key

        if isinstance(self.config.stash.get(xml_key, None), SuiteProperties):
            del self.config.stash[xml_key]
        self._handle.close()


class OutputStream:
    """Child-side plugin under the parent's ``-s``: while a test's setup, call and
    teardown run, file descriptors 1 and 2 are the parent's own, so what the test
    prints reaches the user's terminal as it is printed (not at the end), and the
    child's own pytest output still goes to its output file (read after a crash)."""

    def __init__(self, out_fd: int, err_fd: int) -> None:
        self.fds = (out_fd, err_fd)
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(line_buffering=True)  # a line printed is a line shown

    @contextlib.contextmanager
    def _streaming(self) -> Generator[None, None, None]:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = (os.dup(1), os.dup(2))
        os.dup2(self.fds[0], 1)
        os.dup2(self.fds[1], 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._streaming():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._streaming():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._streaming():
            return (yield)


def install_output_stream(config: pytest.Config) -> None:
    """In a child started under the parent's ``-s``, stream the tests' output there."""
    value = os.environ.pop(STREAM_VARIABLE, "")  # popped: the child's own children keep theirs
    if value:
        out_fd, _, err_fd = value.partition(",")
        config.pluginmanager.register(OutputStream(int(out_fd), int(err_fd)),
                                      "gpucheck-output-stream")


def load_parent_conftests(early_config: pytest.Config) -> None:
    """In a child, import the ``conftest.py`` files its parent session had loaded.

    The child selects items by path; pytest loads the conftests above those
    paths only, so a user's rootdir ``conftest.py`` (its ``implements``
    registrations, hypothesis profiles, fixtures, hooks) would be missing for
    items of the bundled suites, which live outside the rootdir.  pytest has
    no public call to load a conftest by path; this uses the one its own
    initial-conftest loading uses.
    """
    paths = json.loads(os.environ.get(CONFTESTS_VARIABLE) or "[]")
    if not paths or early_config.known_args_namespace.noconftest:
        return
    manager = early_config.pluginmanager
    for path in paths:
        manager._importconftest(  # private: see the docstring
            Path(path),
            early_config.known_args_namespace.importmode,
            early_config.rootpath,
            consider_namespace_packages=bool(early_config.getini("consider_namespace_packages")),
        )


class ItemServer:
    """Worker-side plugin: instead of running the collected items in order, run those
    the parent names, one per request line, and answer each with one line."""

    def __init__(self, config: pytest.Config, requests_fd: int, replies_fd: int,
                 health: Callable[[pytest.Item], str | None]) -> None:
        self.config = config
        self.requests = os.fdopen(requests_fd, "r", encoding="utf-8")
        self.replies = os.fdopen(replies_fd, "w", encoding="utf-8")
        self.health = health
        self._failed: set[str] = set()
        #: The items the parent will send after the current one, in order (as far as it
        #: knows them for sure): a spawn router here batches their MPI jobs with it.
        self.ahead: list[pytest.Item] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # The previous item ran with the parent's hint of its successor, so the fixtures
        # it shares with this one are still up.  Should the hint not have come true,
        # finish the others first (a no-op when it did); an error there is this item's
        # setup error rather than a lost one.
        item.session._setupstate.teardown_exact(item)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self._failed.add(report.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(
                f"{session.testsfailed} error(s) during collection")
        by_target = {child_target(item): item for item in session.items}
        for line in self.requests:
            request = json.loads(line)
            target = str(request["run"])
            item = by_target.get(target)
            if item is None:
                self._answer({"missing": target})
                continue
            # The parent names the item it will send next when it is sure of it (its
            # own next item, routed here): module and session fixtures then stay up for
            # it, as in a plain run, instead of being rebuilt around every item.
            nextitem = by_target.get(request.get("next") or "")
            self.ahead = [by_target[t] for t in request.get("ahead", []) if t in by_target]
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            poisoned = self.health(item) if item.nodeid in self._failed else None
            self._answer({"done": target, "poisoned": poisoned})
            if poisoned is not None or session.shouldstop or session.shouldfail:
                break
        return True

    def _answer(self, entry: dict[str, Any]) -> None:
        self.replies.write(json.dumps(entry) + "\n")
        self.replies.flush()


def install_item_server(config: pytest.Config) -> None:
    """In a worker started by :class:`Worker`, serve the items the parent sends."""
    # Popped: a process this worker starts (an MPI job, a user's subprocess) must not serve.
    value = os.environ.pop(SERVE_VARIABLE, "")
    if not value:
        return
    requests_fd, _, replies_fd = value.partition(",")
    config.pluginmanager.register(
        ItemServer(config, int(requests_fd), int(replies_fd), health_problem),
        ITEM_SERVER)


def health_problem(item: pytest.Item) -> str | None:
    """After a failed item: None if every backend it used still works, else why not."""
    from pytest_gpucheck.processes.sticky_errors import sticky_error
    from pytest_gpucheck.selection import get_selection, item_backends

    selection = get_selection(item.config)
    for name in sorted(item_backends(item)):
        injected = sticky_error(name)
        if injected is not None:
            return f"{name}: {injected}"
        try:
            backend = selection.backend(name)
            if backend.probe().available:
                backend.health_check()
        except Exception as exc:  # any failure means this process cannot go on
            return f"{name}: {type(exc).__name__}: {exc}"
    return None


def install_report_sink(config: pytest.Config) -> None:
    """In a child started by :func:`run_child_pytest`, stream reports to the parent."""
    directory = os.environ.get(REPORT_SINK_VARIABLE)
    if directory:
        config.pluginmanager.register(ReportSink(config, Path(directory)), "gpucheck-report-sink")
        install_output_stream(config)
        start_orphan_guard()
        install_item_server(config)
