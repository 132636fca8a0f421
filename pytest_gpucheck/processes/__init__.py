"""The process layer: everything that starts, guards and talks to the plugin's child
processes, laid out as pytest-xdist's.

- the routers, which choose the process an item runs in: one template
  (``routers/base.py``: claim, run in a child, replay, tear down) and one dispatcher
  that asks the routers in a fixed order; one subclass per kind of child process:
  ``routers/simulator.py``, ``routers/isolation.py`` (a feature brings its own, built
  on this face: ``pytest_gpucheck/sanitizer/router.py``, ``pytest_gpucheck/mpi/spawn.py``);
- the controller side, in the process pytest runs items in (pytest-xdist's
  ``dsession.py`` / ``workermanage.py``), one module per role: ``child_options.py``
  (a child's command line and environment), ``batch.py`` (a list of items in one
  child), ``pool.py`` (long-lived workers, replaced after a crash or a poisoned
  context), ``replaying.py`` (a child's reports logged here as the item's outcome),
  ``deaths.py`` (one honest outcome per item when a child dies), ``peers.py``
  (long-lived children talked to over a socket pair: the benchmark gate's peers),
  ``commands.py`` (a short command run to its end: ``git rev-parse``, a tool's
  ``--version``);
- the worker side, what runs inside a child (pytest-xdist's ``remote.py``):
  ``worker.py`` (the report sink, the live output under ``-s``, the item server); it
  imports nothing of the controller side (``scripts/check_layers.py`` keeps it so);
- what both sides share: ``wire.py`` (what travels how, and reading it back),
  ``guard.py`` (nothing outlives the session), ``sticky_errors.py``.

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
    from pytest_gpucheck.processes.batch import run_child_pytest
    from pytest_gpucheck.processes.child_options import (
        REFUSE,
        backends_option,
        check_refused,
        given_options,
        record_args,
        rule_for,
    )
    from pytest_gpucheck.processes.commands import (
        CommandOutput,
        CommandTimeout,
        run_command,
        run_process_group,
        start_crash_reporter,
    )
    from pytest_gpucheck.processes.deaths import (
        KeepsChildDeaths,
        close_all,
        crash_text,
        death_line,
        failed_report,
        hand_over_deaths,
        missing_report,
        write_deaths,
    )
    from pytest_gpucheck.processes.guard import (
        Stopped,
        scratch_folder,
        sigterm_raises,
        start_orphan_guard,
    )
    from pytest_gpucheck.processes.peers import (
        PEER_DROPPED_ENV,
        PeerProcess,
        bytecode_folder,
        peer_environment,
        remove_bytecode_folder,
    )
    from pytest_gpucheck.processes.pool import Worker
    from pytest_gpucheck.processes.replaying import items_ahead, replay, tear_down_towards
    from pytest_gpucheck.processes.routers import configure_routers
    from pytest_gpucheck.processes.routers.base import ORDER, Router, router_for
    from pytest_gpucheck.processes.routers.isolation import add_isolation_options, isolation_mode
    from pytest_gpucheck.processes.routers.simulator import SimulatorRouter, needs_simulator
    from pytest_gpucheck.processes.wire import ChildRun
    from pytest_gpucheck.processes.worker import install_report_sink, load_parent_conftests

#: Public name -> the module of this package that defines it (imported on first use).
_FACE = {
    # what the core asks of the command line and the children
    "REFUSE": "child_options",
    "backends_option": "child_options",
    "check_refused": "child_options",
    "given_options": "child_options",
    "record_args": "child_options",
    "rule_for": "child_options",
    # the routers: the template, the order, the core's own
    "ORDER": "routers.base",
    "Router": "routers.base",
    "router_for": "routers.base",
    "configure_routers": "routers",
    "add_isolation_options": "routers.isolation",
    "isolation_mode": "routers.isolation",
    "SimulatorRouter": "routers.simulator",
    "needs_simulator": "routers.simulator",
    # the controller side: run items in a child, replay them here, honest deaths
    "ChildRun": "wire",
    "Worker": "pool",
    "run_child_pytest": "batch",
    "items_ahead": "replaying",
    "replay": "replaying",
    "tear_down_towards": "replaying",
    "KeepsChildDeaths": "deaths",
    "close_all": "deaths",
    "crash_text": "deaths",
    "death_line": "deaths",
    "failed_report": "deaths",
    "hand_over_deaths": "deaths",
    "missing_report": "deaths",
    "write_deaths": "deaths",
    # long-lived peers talked to over a socket pair (the benchmark gate's)
    "PEER_DROPPED_ENV": "peers",
    "PeerProcess": "peers",
    "peer_environment": "peers",
    "bytecode_folder": "peers",
    "remove_bytecode_folder": "peers",
    # commands run to their end (the report's commit, a tool's version, the MPI probes
    # and jobs) and the MPI rank's crash reporter
    "CommandOutput": "commands",
    "CommandTimeout": "commands",
    "run_command": "commands",
    "run_process_group": "commands",
    "start_crash_reporter": "commands",
    # the worker side: set up inside a child
    "install_report_sink": "worker",
    "load_parent_conftests": "worker",
    # both sides: a process the plugin started ends with the process that started it
    "start_orphan_guard": "guard",
    # the parent's wait on a child: SIGTERM raises, so the parent ends its children
    "Stopped": "guard",
    "sigterm_raises": "guard",
    # the parent's folders for its children, named after it (a killed run's are removed
    # by the next)
    "scratch_folder": "guard",
}


_face = lazy_face(__name__, _FACE)


def __getattr__(name: str) -> Any:
    return _face(name)


# Spelled out for the linters; the same names as _FACE's, and the hook.
__all__ = [
    "ORDER",
    "PEER_DROPPED_ENV",
    "REFUSE",
    "ChildRun",
    "CommandOutput",
    "CommandTimeout",
    "KeepsChildDeaths",
    "PeerProcess",
    "Router",
    "SimulatorRouter",
    "Stopped",
    "Worker",
    "add_isolation_options",
    "backends_option",
    "bytecode_folder",
    "check_refused",
    "close_all",
    "configure_routers",
    "crash_text",
    "death_line",
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
    "peer_environment",
    "record_args",
    "remove_bytecode_folder",
    "replay",
    "router_for",
    "rule_for",
    "run_child_pytest",
    "run_command",
    "run_process_group",
    "scratch_folder",
    "sigterm_raises",
    "start_crash_reporter",
    "start_orphan_guard",
    "tear_down_towards",
    "write_deaths",
]
