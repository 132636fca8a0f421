"""Run the ``numba-cudasim`` items of a session in a child process.

The Numba CUDA simulator is chosen when ``numba.cuda`` is first imported, so
it cannot share a process with real ``numba-cuda``: the parent routes the
simulator items to a child (:mod:`pytest_gpucheck.processes.batch`, or a long-lived
:mod:`~pytest_gpucheck.processes.pool` worker) and replays their reports.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_gpucheck.environment import SIMULATOR_CHILD_VARIABLE
from pytest_gpucheck.processes.batch import run_child_pytest
from pytest_gpucheck.processes.child_options import backends_option
from pytest_gpucheck.processes.deaths import (
    KeepsChildDeaths,
    crash_text,
    death_line,
    failed_outside_tests_line,
    failed_report,
    missing_report,
)
from pytest_gpucheck.processes.replaying import items_ahead, replay
from pytest_gpucheck.processes.routers.base import Router, router_for
from pytest_gpucheck.processes.wire import ChildRun
from pytest_gpucheck.selection import item_backends

SIMULATOR_BACKEND = "numba-cudasim"
#: Key of an xdist worker's output that carries its children's deaths to the controller.
DEATHS_OUTPUT = "gpucheck_child_deaths"


def needs_simulator(item: pytest.Item) -> bool:
    """True for items parametrized on the ``numba-cudasim`` backend."""
    return SIMULATOR_BACKEND in item_backends(item)


class SimulatorRouter(KeepsChildDeaths, Router):
    """Parent-side plugin: run ``numba-cudasim`` items in one child process.

    Without pytest-xdist all simulator items of the session run in a single
    child (one Numba import and one JIT cache); under xdist each worker sends
    the simulator items it is given to one long-lived child, one at a time,
    naming the next one so module fixtures stay up.  When a child dies, the
    item it was running fails with the cause and the items after it run in a
    fresh child.
    """

    kind = "simulator"
    #: This router's key in an xdist worker's output (its children's deaths).
    DEATHS_OUTPUT = DEATHS_OUTPUT

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, list[pytest.TestReport]] = {}
        #: One line per child that died (for the summary and the exit status).
        self.deaths: list[str] = []
        self.worker: Any = None  # the long-lived worker, when items are served one by one

    def claims(self, item: pytest.Item) -> bool:
        return needs_simulator(item) and item.get_closest_marker("skip") is None

    def run(self, item: pytest.Item, nextitem: pytest.Item | None
            ) -> list[pytest.TestReport]:
        if self._served_one_by_one():
            from pytest_gpucheck.processes.pool import Worker

            if self.worker is None:
                self.worker = Worker(
                    self.config, [other for other in item.session.items
                                  if router_for(other) is self],
                    what="The numba-cudasim child process", deaths=self.deaths,
                    extra_args=backends_option(self.config, [SIMULATOR_BACKEND]),
                    env={"NUMBA_ENABLE_CUDASIM": "1", SIMULATOR_CHILD_VARIABLE: "1"})
            fresh_each = self.config.getoption("gpu_isolate", "auto") == "test"
            ahead = [] if fresh_each else [
                other for other in items_ahead(item) if router_for(other) is self]
            # The next item this worker runs keeps the fixtures it shares with this one
            # up, as in a plain run (items run here in between do not touch them).
            reports = self.worker.run(item, nextitem=ahead[0] if ahead else None, ahead=ahead)
            if fresh_each:
                self.worker.close()
            return list(reports)
        if item.nodeid not in self.results:
            if os.environ.get("PYTEST_XDIST_WORKER"):
                batch = [item]
            else:
                batch = [
                    other
                    for other in item.session.items
                    if router_for(other) is self and other.nodeid not in self.results
                ]
            self._run(batch)
        if item.nodeid not in self.results:  # the batch child stopped at --maxfail first
            self._run([item])
        reports = self.results.pop(item.nodeid)
        self.results[item.nodeid] = []  # replayed: never run or logged again
        return reports

    def _served_one_by_one(self) -> bool:
        """Under xdist (a worker learns its items one at a time) and under an explicit
        ``--gpu-isolate=backend|test``, items go to a long-lived worker that checks its
        health after a failure; otherwise the whole session's batch goes to one child."""
        return bool(os.environ.get("PYTEST_XDIST_WORKER")) or self.config.getoption(
            "gpu_isolate", "auto") in ("backend", "test")

    def _run(self, batch: list[pytest.Item]) -> None:
        pending = batch
        while pending:
            pending = self._run_once(pending)
            if pending and self._stops(batch):
                # The child stopped at --maxfail (forwarded as what this session may still
                # fail): the session ends on those failures, so the rest must not start.
                return

    def _stops(self, batch: list[pytest.Item]) -> bool:
        maxfail = int(self.config.getoption("maxfail", 0) or 0)
        failed = sum(any(r.failed for r in self.results.get(item.nodeid, ()))
                     for item in batch)
        return bool(maxfail) and batch[0].session.testsfailed + failed >= maxfail

    def _run_once(self, batch: list[pytest.Item]) -> list[pytest.Item]:
        """Run ``batch`` in one child; store each item's reports; return the items it
        never reached (to run in a fresh child)."""
        env = {"NUMBA_ENABLE_CUDASIM": "1", SIMULATOR_CHILD_VARIABLE: "1"}
        what = "The numba-cudasim child process"

        def keep_finished(run: ChildRun) -> None:
            for item in batch:
                if run.finished(item.nodeid):
                    self.results[item.nodeid] = run.for_nodeid(item.nodeid).get(0, [])
                    replay(item, self.results[item.nodeid])
                    self.results[item.nodeid] = []

        run = run_child_pytest(self.config, batch,
                               extra_args=backends_option(self.config, [SIMULATOR_BACKEND]),
                               env=env,
                               on_interrupt=keep_finished)
        reports = run.for_nodeid
        remaining: list[pytest.Item] = []
        crashed: pytest.Item | None = None
        for item in batch:
            own = reports(item.nodeid).get(0, [])
            if run.finished(item.nodeid):
                self.results[item.nodeid] = own
            elif run.started_ranks(item.nodeid) and crashed is None:
                crashed = item
                self.results[item.nodeid] = [*own, failed_report(
                    item, crash_text(item, run, what), when="teardown" if any(
                        r.when == "call" for r in own) else "call")]
            else:
                remaining.append(item)
        if run.died:
            self.deaths.append(death_line(what, run.returncode, crashed,
                                          unstarted=bool(remaining)))
        elif run.returncode != 0 and not remaining and not any(
            r.failed for item in batch for r in self.results.get(item.nodeid, [])
        ):
            self.deaths.append(failed_outside_tests_line(what, run.returncode, run.output))
        if remaining and crashed is None:
            # Nothing started and nothing crashed: the child failed as a whole
            # (usage or collection error); running it again would fail the same way.
            for item in remaining:
                self.results[item.nodeid] = [missing_report(item, run, what)]
            return []
        return remaining

    def close_children(self) -> None:
        if self.worker is not None:
            self.worker.close()
