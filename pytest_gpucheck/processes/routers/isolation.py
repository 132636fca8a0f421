"""``--gpu-isolate``: run backend items in workers replaced after a crash or a sticky error.

A CUDA error such as an illegal address poisons the process: every later test
on that device fails, or passes on garbage.  With ``--gpu-isolate=backend``
the items run in long-lived workers (:class:`pytest_gpucheck.processes.pool.Worker`),
one per device: every item whose backends run on the GPU shares the GPU's
worker (an interop pair of two GPU frameworks included: in any process the
frameworks share the device's context, so that context, not the framework, is
what a sticky error poisons), and every item on host backends shares the host's
worker.  A worker that crashes fails the item it was running, and a worker
whose health probe fails after a failed item exits, so the next item runs in a
fresh one.  A worker is started with ``--gpu-backends`` naming only the
backends of its items (its collection probes nothing else), and in a plain
session it is told to finish as soon as no item ahead needs it.  ``test``
gives every item a fresh worker.  ``auto`` (the default) is ``backend`` when
a selected GPU backend is available; otherwise it is ``contain``: only the items
that can crash the process for a reason the plugin knows, those on a backend
whose kernels run unchecked machine code on the host
(:attr:`~pytest_gpucheck.backends.base.Backend.unchecked_host_code`: numba-cpu)
and those that check an implementation the user registered (any code at all,
a C extension too), run in the host's worker; the rest run here.  A run given
an option no worker can take (``--pdb``, ``--trace``, ``--log-file``) runs them
here too under ``auto`` (the user is debugging in this process).  The
isolation router is the last the dispatcher asks
(:mod:`pytest_gpucheck.processes.routers.base`): it runs the backend items no router
before it claims (the sanitizer's, the ``numba-cudasim`` child's, the MPI jobs'), and
skipped items (an unavailable backend, a pair across devices, a converter the consumer
lacks, all decided at collection) are never routed.

:func:`pytest_gpucheck.processes.inject_sticky_error` is a test hook that makes
this process behave as after a CUDA sticky error on one backend: its health
probe fails and every later test on that backend fails at setup.  It lets the
CPU tier show what isolation buys without a GPU.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

import pytest

from pytest_gpucheck.options import add_choice_option
from pytest_gpucheck.processes.deaths import KeepsChildDeaths, close_all
from pytest_gpucheck.processes.replaying import items_ahead
from pytest_gpucheck.processes.routers.base import Router, router_for
from pytest_gpucheck.processes.sticky_errors import StickyError, any_sticky_error, sticky_error
from pytest_gpucheck.processes.wire import ITEM_SERVER

# The child-process machinery (the simulator router, workers) is imported only by runs
# that isolate: a plain run loads this module and nothing more.

ISOLATE_OPTION = "--gpu-isolate"
MODES = ("auto", "none", "backend", "test")
#: What ``auto`` is on a machine without an available GPU backend: the items that can crash
#: the process (:func:`can_crash`) in the host's worker, the rest here.
CONTAIN = "contain"
#: Key of an xdist worker's output that carries its isolation workers' deaths.
DEATHS_OUTPUT = "gpucheck_isolation_deaths"

#: The worker keys: the host's items and the GPU's (this process's one device).
HOST, GPU = "host", "gpu"


def add_isolation_options(group: Any) -> None:
    add_choice_option(
        group, ISOLATE_OPTION, MODES, dest="gpu_isolate", default="auto",
        help="run backend items in worker processes that are replaced after a crash or a "
        "poisoned device (sticky CUDA error): backend (one worker for the GPU's items, one "
        "for the host's), test (a fresh worker per test), none. Default auto: backend when "
        "a selected GPU backend is available, else the items on numba-cpu and those that "
        "check your registered implementations in one host worker (a crash costs one test).")


def isolation_mode(config: pytest.Config) -> str:
    """The mode this run uses (``auto`` resolved): ``backend`` when a selected GPU backend
    is available, else :data:`CONTAIN`, or ``none`` when an option no worker can take
    (``--pdb``) asks to debug in this process."""
    mode = str(config.getoption("gpu_isolate", "auto") or "auto")
    if mode != "auto":
        return mode
    from pytest_gpucheck.backends import GPU_BACKENDS
    from pytest_gpucheck.selection import get_selection

    selection = get_selection(config)
    gpu = [name for name in selection.names if name in GPU_BACKENDS]
    if any(selection.probes[name].available for name in gpu):
        return "backend"
    from pytest_gpucheck.processes.child_options import REFUSE, given_options, rule_for

    # The user asked to debug here (--pdb, --trace) or to log here (--log-file): an
    # explicit option wins over the implicit containment (an explicit --gpu-isolate
    # with it is still refused, exit 4).
    if any(rule_for(name).kind == REFUSE for name, _ in given_options(config)):
        return "none"
    return CONTAIN


def can_crash(item: pytest.Item) -> bool:
    """Whether ``item`` runs code that can kill the process, as far as the plugin knows:
    a backend whose kernels run unchecked on the host (numba-cpu), or an implementation the
    user registered (checked by the conformance suites)."""
    from pytest_gpucheck.backends import backend_class
    from pytest_gpucheck.selection import item_backends

    if any(backend_class(name).unchecked_host_code for name in item_backends(item)):
        return True
    callspec = getattr(item, "callspec", None)
    for value in callspec.params.values() if callspec is not None else ():
        if getattr(getattr(value, "implementation", None), "origin", None) == "user":
            return True
    return False


def configure_isolation(config: pytest.Config) -> None:
    """Register the sticky-error guard, and the router unless the mode is ``none`` or
    this process is a rank under a launcher (launched mode)."""
    config.pluginmanager.register(StickyGuard(), "gpucheck-sticky-guard")
    from pytest_gpucheck.environment import launched_rank

    # Under a launcher every rank is a process the launcher owns; a worker started by a
    # rank would inherit the rank's MPI environment without being a rank.  A benchmark
    # peer (the gate's baseline or candidate process, a stored mode's fresh process) is
    # the process being timed: it runs its items itself (its server calls the runner
    # directly), so a worker would only sit idle beside the timed rounds, with every
    # framework imported and a CUDA context of its own.
    if config.getoption("gpu_isolate", "auto") != "none" and launched_rank() is None \
            and config.getoption("gpu_bench_peer", None) is None:
        config.pluginmanager.register(IsolationRouter(config), "gpucheck-isolation-router")


class StickyGuard:
    """Every test on a backend poisoned by ``inject_sticky_error`` fails at setup."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not any_sticky_error():
            return
        from pytest_gpucheck.selection import item_backends

        for name in sorted(item_backends(item)):
            injected = sticky_error(name)
            if injected is not None:
                raise StickyError(f"{name}: {injected} (sticky: an earlier test "
                                  "poisoned this process)")


def device_key(backends: set[str]) -> str:
    """The worker an item with these backends runs in: the GPU's when one of them runs
    on the GPU (this process has one device), else the host's."""
    from pytest_gpucheck.backends import GPU_BACKENDS

    return GPU if any(name in GPU_BACKENDS for name in backends) else HOST


class IsolationRouter(KeepsChildDeaths, Router):
    """Parent-side plugin: run backend items in :class:`~pytest_gpucheck.processes.pool.Worker`
    processes, one per device (``backend``) or one per item (``test``)."""

    kind = "isolation"
    #: This router's key in an xdist worker's output (its children's deaths).
    DEATHS_OUTPUT = DEATHS_OUTPUT

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.workers: dict[str, Any] = {}
        #: Workers told to finish (no item ahead needs them); reaped at session end.
        self.released: list[Any] = []
        #: key -> the items routed to it, in session order (made on first use).
        self._universe: dict[str, list[pytest.Item]] | None = None
        #: node id -> the worker that runs it (None: not routed here); made once per
        #: item, since every item looks at the items ahead.
        self._keys: dict[str, str | None] = {}
        #: One line per worker that died (for the summary and the exit status).
        self.deaths: list[str] = []

    @cached_property
    def mode(self) -> str:
        """This run's :func:`isolation_mode` (``auto`` resolved), read on first use."""
        return isolation_mode(self.config)

    def claims(self, item: pytest.Item) -> bool:
        """The backend items (under ``contain``, those :func:`can_crash` names); the
        dispatcher asks this router last, so it runs those no router before it claims."""
        if self.mode == "none":
            return False
        from pytest_gpucheck.selection import item_backends

        return bool(item_backends(item)) and (self.mode != CONTAIN or can_crash(item))

    def _key(self, item: pytest.Item) -> str | None:
        """The worker that runs ``item``, or None when the dispatcher sends it elsewhere
        (another router, or this process for a skipped item)."""
        if item.nodeid not in self._keys:
            from pytest_gpucheck.selection import item_backends

            self._keys[item.nodeid] = (device_key(item_backends(item))
                                       if router_for(item) is self else None)
        return self._keys[item.nodeid]

    def universe(self, session: pytest.Session) -> dict[str, list[pytest.Item]]:
        """key -> every item of the session routed to that key's worker, in order."""
        if self._universe is None:
            self._universe = {}
            for other in session.items:
                key = self._key(other)
                if key is not None:
                    self._universe.setdefault(key, []).append(other)
        return self._universe

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Route the session's items once, before the first (every router is registered
        by now).  ``backend``: start every worker the session will need before the first
        item, so their start-ups (a Python, pytest, the frameworks' imports, the
        collection) overlap each other and the items that run elsewhere, instead of each
        waiting for its first item.  Not under pytest-xdist, where the controller decides
        later which items this process gets."""
        if self.mode == "none" or session.config.option.collectonly or session.testsfailed:
            return
        # Asked before the dispatcher routed the session (some routers register at
        # collection), a key may be stale.
        self._keys.clear()
        self._universe = None
        universe = self.universe(session)
        if self.mode not in ("backend", CONTAIN) or self._under_a_controller():
            return
        for key, routed in universe.items():
            if key not in self.workers:
                self.workers[key] = self._new_worker(routed)
                self.workers[key].start()

    def _under_a_controller(self) -> bool:
        """Whether another process hands this one its items (pytest-xdist, a worker's
        item server): then which items come here is not known in advance."""
        return bool(os.environ.get("PYTEST_XDIST_WORKER")) or (
            self.config.pluginmanager.get_plugin(ITEM_SERVER) is not None)

    def run(self, item: pytest.Item, nextitem: pytest.Item | None
            ) -> list[pytest.TestReport]:
        key = str(self._key(item))
        if self.mode == "test":
            worker = self._new_worker([item])
            try:
                return list(worker.run(item))
            finally:
                worker.close()
        worker = self.workers.get(key)
        if worker is None:
            worker = self.workers[key] = self._new_worker(
                self.universe(item.session).get(key, [item]))
        # The next item this worker runs keeps the fixtures it shares with this one
        # up, as in a plain run.
        shared = next((other for other in items_ahead(item) if self._key(other) == key), None)
        reports = worker.run(item, nextitem=shared)
        if shared is None and self._last_of_session(item, key):
            # No item ahead needs this worker: it finishes its session now (its device
            # memory and processes go) while the run goes on; reaped at session end.
            worker.release()
            self.released.append(self.workers.pop(key))
        return list(reports)

    def _last_of_session(self, item: pytest.Item, key: str) -> bool:
        """Whether ``item`` is surely the last item of ``key`` this process runs: in a
        plain session, the last of its key in the session's order.  Under pytest-xdist
        the controller may still send more, so the worker stays until the session ends."""
        if self._under_a_controller():
            return False
        routed = self.universe(item.session).get(key, [])
        return bool(routed) and routed[-1] is item

    def _new_worker(self, universe: list[pytest.Item]) -> Any:
        from pytest_gpucheck.backends import BACKENDS
        from pytest_gpucheck.processes.child_options import backends_option
        from pytest_gpucheck.processes.pool import Worker
        from pytest_gpucheck.selection import item_backends

        # Only the backends its items name: the worker's collection probes (imports) no
        # other framework, and its parametrization yields the same ids for them.
        names = sorted({name for other in universe for name in item_backends(other)},
                       key=list(BACKENDS).index)
        return Worker(self.config, universe, what=f"The isolation worker ({', '.join(names)})",
                      extra_args=backends_option(self.config, names), deaths=self.deaths)

    def close_children(self) -> None:
        workers = [*self.released, *self.workers.values()]
        self.workers.clear()
        self.released.clear()
        close_all(workers)


__all__ = ["CONTAIN", "GPU", "HOST", "ISOLATE_OPTION", "MODES", "StickyError",
           "add_isolation_options", "can_crash", "configure_isolation", "device_key",
           "isolation_mode"]
