"""The process layer: everything that starts, guards and talks to the plugin's child
processes, laid out as pytest-xdist's.

- the controller side, in the process pytest runs items in (pytest-xdist's
  ``dsession.py`` / ``workermanage.py``): ``controller.py`` (start a batch child, replay
  its reports, one honest outcome per item when it dies), ``pool.py`` (long-lived
  workers, replaced after a crash or a poisoned context), ``guard.py`` (nothing
  outlives the session), ``deaths.py``, ``child_options.py`` (what a child is given of
  the command line);
- the routers, which choose the process an item runs in: one module per kind of child
  process behind one protocol (``routers/base.py``): ``routers/isolation.py``,
  ``routers/simulator.py`` (a feature brings its own: the sanitizer's is
  ``pytest_gpucheck/sanitizer/router.py``, built on this face);
- the worker side, what runs inside a child (pytest-xdist's ``remote.py``):
  ``worker.py`` (the report sink, the live output under ``-s``, the item server);
- the wire between the two (pytest-xdist's serialized reports and ``workeroutput``):
  ``wire.py`` says what travels how and reads it back.

The rest of the package imports only this face (``scripts/check_layers.py`` keeps it
so); each name is imported on first use, so loading the plugin starts none of the
machinery.  ``inject_sticky_error`` is the layer's public test hook
(``docs/reliability.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_gpucheck import lazy_face
from pytest_gpucheck.processes.sticky_errors import inject_sticky_error

if TYPE_CHECKING:
    from pytest_gpucheck.processes.child_options import (
        REFUSE,
        check_refused,
        given_options,
        record_args,
        rule_for,
    )
    from pytest_gpucheck.processes.controller import (
        backends_option,
        crash_text,
        describe_exit,
        failed_report,
        hand_over_deaths,
        items_ahead,
        missing_report,
        replay,
        run_child_pytest,
        tear_down_towards,
        write_deaths,
    )
    from pytest_gpucheck.processes.deaths import KeepsChildDeaths, close_all
    from pytest_gpucheck.processes.pool import Worker
    from pytest_gpucheck.processes.routers.base import Router
    from pytest_gpucheck.processes.routers.isolation import (
        add_isolation_options,
        configure_isolation,
        isolation_mode,
    )
    from pytest_gpucheck.processes.routers.simulator import SimulatorRouter, needs_simulator
    from pytest_gpucheck.processes.wire import ChildRun
    from pytest_gpucheck.processes.worker import install_report_sink, load_parent_conftests

#: Public name -> the module of this package that defines it (imported on first use).
_FACE = {
    # what the core asks of the command line and the children
    "REFUSE": "child_options",
    "check_refused": "child_options",
    "given_options": "child_options",
    "record_args": "child_options",
    "rule_for": "child_options",
    # the routers
    "Router": "routers.base",
    "KeepsChildDeaths": "deaths",
    "close_all": "deaths",
    "Worker": "pool",
    "add_isolation_options": "routers.isolation",
    "configure_isolation": "routers.isolation",
    "isolation_mode": "routers.isolation",
    "SimulatorRouter": "routers.simulator",
    "needs_simulator": "routers.simulator",
    # the controller side: run items in a child and replay them here
    "ChildRun": "wire",
    "backends_option": "controller",
    "crash_text": "controller",
    "describe_exit": "controller",
    "failed_report": "controller",
    "hand_over_deaths": "controller",
    "items_ahead": "controller",
    "missing_report": "controller",
    "replay": "controller",
    "run_child_pytest": "controller",
    "tear_down_towards": "controller",
    "write_deaths": "controller",
    # the worker side: set up inside a child
    "install_report_sink": "worker",
    "load_parent_conftests": "worker",
}


_face = lazy_face(__name__, _FACE)


def __getattr__(name: str) -> Any:
    return _face(name)


# Spelled out for the linters; the same names as _FACE's, and the hook.
__all__ = [
    "REFUSE",
    "ChildRun",
    "KeepsChildDeaths",
    "Router",
    "SimulatorRouter",
    "Worker",
    "add_isolation_options",
    "backends_option",
    "check_refused",
    "close_all",
    "configure_isolation",
    "crash_text",
    "describe_exit",
    "failed_report",
    "given_options",
    "hand_over_deaths",
    "inject_sticky_error",
    "install_report_sink",
    "isolation_mode",
    "items_ahead",
    "load_parent_conftests",
    "missing_report",
    "needs_simulator",
    "record_args",
    "replay",
    "rule_for",
    "run_child_pytest",
    "tear_down_towards",
    "write_deaths",
]
