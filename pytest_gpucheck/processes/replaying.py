"""This session's side of an item run in a child: the items ahead of it (which a router
batches with it), its reports logged as its outcome here, the in-process fixtures torn
down towards the next item, and what the child's session handed over.

A router runs an item elsewhere and returns its reports; the router template
(:class:`~pytest_gpucheck.processes.routers.base.Router`) then calls :func:`replay` and
:func:`tear_down_towards`, so the user sees ordinary results, tracebacks, sections and
warnings, as if the item had run in this process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_gpucheck.processes.wire import ITEM_SERVER, SuiteProperties, warning_message


def replay(item: pytest.Item, reports: Sequence[pytest.TestReport]) -> None:
    """Log ``reports`` (made elsewhere) as the outcome of ``item`` in this session, then
    record the warnings the item raised there (as pytest does after an item)."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    for report in reports:
        for data in getattr(report, "gpucheck_warnings", ()):
            item.config.hook.pytest_warning_recorded.call_historic(kwargs={
                "warning_message": warning_message(data), "when": "runtest",
                "nodeid": item.nodeid, "location": None})


def tear_down_towards(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Finish the in-process fixtures that ``nextitem`` no longer shares.

    An item run elsewhere skips this process's setup and teardown, but the
    item before it left its module and class fixtures up for it (it was the
    ``nextitem`` then); pytest's runner would tear them down after this item.
    """
    setup_state = item.session._setupstate
    call = pytest.CallInfo.from_call(lambda: setup_state.teardown_exact(nextitem), when="teardown")
    if call.excinfo is not None:
        report = item.ihook.pytest_runtest_makereport(item=item, call=call)
        item.ihook.pytest_runtest_logreport(report=report)


def apply_session_output(config: pytest.Config, output: Mapping[str, Any]) -> None:
    """Apply what a child's session handed over (see the module docstring) to this session:
    its ``record_testsuite_property`` properties go into this run's junit file."""
    from _pytest.junitxml import xml_key  # private: where pytest keeps its LogXML

    xml = config.stash.get(xml_key, None)
    if xml is None or isinstance(xml, SuiteProperties):
        if isinstance(xml, SuiteProperties):  # a child's child: pass them on
            xml.properties.extend(output.get("testsuite_properties", []))
        return
    for name, value in output.get("testsuite_properties", []):
        xml.add_global_property(name, value)


def items_ahead(item: pytest.Item) -> list[pytest.Item]:
    """The items this process will run after ``item``, in order, as far as it knows
    them for sure: a router batches their work (one MPI job for many items) with
    ``item``'s.

    - a long-lived worker (:mod:`pytest_gpucheck.processes.pool`): what its parent said
      it will send next;
    - a pytest-xdist worker: the items the controller already gave it (xdist's own
      queue; under ``--dist=worksteal``, where queued items may be taken away and
      would run twice, only the next one, which it has already taken);
    - a plain session: every item after ``item``.
    """
    config = item.config
    server = config.pluginmanager.get_plugin(ITEM_SERVER)
    if server is not None:
        return list(getattr(server, "ahead", []))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return _xdist_queue(config, item.session)
    items = item.session.items
    try:
        return items[items.index(item) + 1:]
    except ValueError:
        return []


def _xdist_queue(config: pytest.Config, session: pytest.Session) -> list[pytest.Item]:
    """The items an xdist worker was given and has not run yet, in the order it runs them.

    pytest-xdist has no public call for this: its worker plugin keeps the item being
    run next (``nextitem_index``) and the rest in ``torun`` (a locked deque of
    indices into ``session.items``, ended by a shutdown marker).  Anything unexpected
    gives no items, which costs speed (one job per item), never a verdict.
    """
    interactor = next((plugin for plugin in config.pluginmanager.get_plugins()
                       if type(plugin).__name__ == "WorkerInteractor"), None)
    queue = getattr(interactor, "torun", None)
    if queue is None or not hasattr(queue, "lock"):
        return []
    try:
        with queue.lock() as pending:
            indices = [getattr(interactor, "nextitem_index", None), *pending]
        if config.getoption("dist", None) == "worksteal":
            indices = indices[:1]
    except Exception:  # another xdist version: fall back to one item at a time
        return []
    ahead: list[pytest.Item] = []
    for index in indices:
        if type(index) is not int or not 0 <= index < len(session.items):
            break  # the shutdown marker: nothing after it runs
        ahead.append(session.items[index])
    return ahead
