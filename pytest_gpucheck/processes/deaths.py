"""The session-end hooks shared by the routers whose long-lived children may die.

Kept apart from :mod:`pytest_gpucheck.processes.controller` so that a router can extend it at
load time while the child-process machinery is imported only by runs that use it.
"""

from __future__ import annotations

import os
from typing import Any

import pytest


class KeepsChildDeaths:
    """The session-end hooks of a router whose long-lived children may die: close them,
    hand the deaths to the xdist controller (or fail the run), keep those an xdist worker
    handed over, and print one red line per death.  A subclass sets ``config``,
    ``deaths`` and ``DEATHS_OUTPUT`` (its key in an xdist worker's output) and says how
    its children close."""

    config: pytest.Config
    deaths: list[str]
    DEATHS_OUTPUT = ""

    def close_children(self) -> None:
        """Close every child this router started (each reaps its process)."""
        raise NotImplementedError

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from .controller import hand_over_deaths

        self.close_children()
        hand_over_deaths(self.config, session, self.deaths, self.DEATHS_OUTPUT)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist (controller): a worker ended; keep the deaths it handed over."""
        from .controller import collect_deaths

        collect_deaths(node, self.deaths, self.DEATHS_OUTPUT)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return
        from .controller import write_deaths

        write_deaths(terminalreporter, self.deaths)
