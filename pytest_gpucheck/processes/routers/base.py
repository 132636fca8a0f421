"""What every router is: a parent-side plugin that runs the items it claims in child
processes of one kind (isolation workers, the simulator child, sanitized workers)."""

from __future__ import annotations

import pytest


class Router:
    """A parent-side plugin that takes over ``pytest_runtest_protocol`` for the items it
    claims.  The isolation router runs the backend items no other router claims, so a
    new kind of child process needs only its own router, not an exception in another."""

    def claims(self, item: pytest.Item) -> bool:
        """Whether this router runs ``item`` in one of its children."""
        raise NotImplementedError


def other_routers(config: pytest.Config, router: Router) -> list[Router]:
    """The routers registered in this process besides ``router`` (registered before
    collection, so the list is read once, when the first item is routed)."""
    return [plugin for plugin in config.pluginmanager.get_plugins()
            if isinstance(plugin, Router) and plugin is not router]
