"""What every router is, and the one dispatcher that asks them.

A router is a parent-side plugin that runs the items it claims in child processes of
one kind (sanitized workers, the simulator child, MPI jobs, isolation workers).
:class:`Router` is the template of an item's trip: the dispatcher asks
:meth:`Router.claims`, then :meth:`Router.protocol` runs the item elsewhere
(:meth:`Router.run`, the one step a kind of child process writes), logs the reports
it returns as the item's outcome here and tears down this process's fixtures towards
the next item.  A new kind of child process is one subclass with a place in
:data:`ORDER`.

:class:`Dispatcher` holds the only ``pytest_runtest_protocol`` of the routers: it asks
the routers registered in this process in the order of :data:`ORDER`, once per item
as the test loop starts, and the first that claims an item runs it; a skipped item,
or one no router claims, runs here.  A router's rule is therefore never an exception
in another's: the isolation router, last, claims backend items by its own rule and
runs those no router before it claims; a router that looks at other items asks
:func:`router_for`, the dispatcher's decision, not its own rule.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import ClassVar

import pytest

#: The routers' kinds, in the order the dispatcher asks them: a feature's router that
#: takes an item out of the isolation workers comes before them.
ORDER = ("sanitizer", "simulator", "mpi-spawn", "isolation")
#: The dispatcher's name in the plugin manager.
DISPATCHER = "gpucheck-router-dispatcher"


class Router:
    """A parent-side plugin that runs the items it claims in child processes of one kind.

    A subclass sets :attr:`kind` (its place in :data:`ORDER`) and writes
    :meth:`claims` and :meth:`run`; it is registered with the plugin manager like any
    plugin (its own session hooks: closing its children, their deaths)."""

    #: The router's place in :data:`ORDER`.
    kind: ClassVar[str] = ""

    def claims(self, item: pytest.Item) -> bool:
        """Whether this router runs ``item`` in one of its children."""
        raise NotImplementedError

    def run(self, item: pytest.Item, nextitem: pytest.Item | None
            ) -> Sequence[pytest.TestReport]:
        """Run ``item`` in a child and return its reports (made honest when the child
        died on it); ``nextitem`` is pytest's, the item this process runs next."""
        raise NotImplementedError

    def protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """An item's trip through this router: run it in a child, log its reports here,
        tear down this process's fixtures towards ``nextitem``."""
        from pytest_gpucheck.processes.replaying import replay, tear_down_towards

        replay(item, self.run(item, nextitem))
        tear_down_towards(item, nextitem)


def routers(config: pytest.Config) -> list[Router]:
    """The routers registered in this process, in :data:`ORDER`."""
    found = [plugin for plugin in config.pluginmanager.get_plugins()
             if isinstance(plugin, Router)]
    return sorted(found, key=_place)


def _place(router: Router) -> int:
    if router.kind not in ORDER:
        raise TypeError(f"{type(router).__name__}.kind is {router.kind!r}; a router's kind "
                        f"is its place in the dispatcher's order, one of {', '.join(ORDER)}")
    return ORDER.index(router.kind)


#: node id -> the router that runs the item (None: this process), decided once per item:
#: by the dispatcher for the whole session when the test loop starts (every router is
#: registered by then), or on first use for an item asked about before.
ROUTES = pytest.StashKey[dict[str, "Router | None"]]()


def router_for(item: pytest.Item) -> Router | None:
    """The router that runs ``item``: the first in :data:`ORDER` that claims it; None for
    a skipped item (its skip is decided here, at setup) or one no router claims.  Every
    router that looks at other items (the items its child will run, the next one it
    keeps fixtures up for) asks this, so no two routers count one item as theirs."""
    routes = item.session.stash.setdefault(ROUTES, {})
    if item.nodeid not in routes:
        routes[item.nodeid] = _first_claim(item)
    return routes[item.nodeid]


def _first_claim(item: pytest.Item) -> Router | None:
    if item.get_closest_marker("skip") is not None:
        return None
    return next((router for router in routers(item.config) if router.claims(item)), None)


def route(session: pytest.Session) -> None:
    """Decide every collected item's router once (:data:`ROUTES`), replacing what was
    decided before the last router registered (some register at collection)."""
    session.stash[ROUTES] = {item.nodeid: _first_claim(item) for item in session.items}


class Dispatcher:
    """The one ``pytest_runtest_protocol`` of the routers: the first router in
    :data:`ORDER` that claims an item runs it; other items run here as usual.  The
    claims are decided once, as the test loop starts (:func:`route`)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        # A wrapper: before every router's own loop hook (the isolation router starts
        # its workers from these routes) and a worker's item server.
        if not session.config.option.collectonly and not session.testsfailed:
            route(session)
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        router = router_for(item)
        if router is None:
            return None
        router.protocol(item, nextitem)
        return True


def register_dispatcher(config: pytest.Config) -> None:
    """Register the dispatcher (once) in this process."""
    if config.pluginmanager.get_plugin(DISPATCHER) is None:
        config.pluginmanager.register(Dispatcher(), DISPATCHER)
