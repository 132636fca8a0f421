"""The session-end hooks shared by the routers whose long-lived children may die.

Kept apart from :mod:`pytest_gpucheck.processes.controller` so that a router can extend it at
load time while the child-process machinery is imported only by runs that use it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from typing import Any, Protocol

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
        from pytest_gpucheck.processes.controller import hand_over_deaths
        from pytest_gpucheck.processes.guard import Stopped

        try:
            self.close_children()
        except (KeyboardInterrupt, Stopped) as exc:
            interrupted_at_the_end(session, exc)
        hand_over_deaths(self.config, session, self.deaths, self.DEATHS_OUTPUT)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist (controller): a worker ended; keep the deaths it handed over."""
        from pytest_gpucheck.processes.controller import collect_deaths

        collect_deaths(node, self.deaths, self.DEATHS_OUTPUT)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return
        from pytest_gpucheck.processes.controller import write_deaths

        write_deaths(terminalreporter, self.deaths)


class Child(Protocol):
    """A child process's parent-side handle (:class:`~pytest_gpucheck.processes.pool.Worker`)."""

    def close(self) -> None:
        """Let the child end its session, then reap it."""

    def stop(self) -> None:
        """End the child now and reap it."""


def close_all(children: Sequence[Child]) -> None:
    """Close each child in turn; when that is interrupted (Ctrl-C, SIGTERM), stop at once
    the child being closed (a no-op when it stopped itself) and every one not yet
    closed, then let the interruption go on: no child outlives the session."""
    for index, child in enumerate(children):
        try:
            child.close()
        except BaseException:
            for rest in children[index:]:
                rest.stop()
            raise


def interrupted_at_the_end(session: pytest.Session, exc: BaseException) -> None:
    """Ctrl-C or SIGTERM after the last test, while the children ended their sessions: the
    run ends as pytest ends one interrupted during its tests (exit 2, or 143 for SIGTERM,
    its summary, its JUnit file), not with a traceback out of this hook, which would skip
    the session-end hooks after it (pytest's JUnit file is written in one)."""
    what = "KeyboardInterrupt" if isinstance(exc, KeyboardInterrupt) else str(exc)
    session.shouldstop = (f"gpucheck: {what} while the child processes ended their sessions; "
                          "they were stopped")
    if isinstance(exc, KeyboardInterrupt):
        session.exitstatus = pytest.ExitCode.INTERRUPTED
        session.config.hook.pytest_keyboard_interrupt(
            excinfo=pytest.ExceptionInfo.from_exception(exc))
    else:
        session.exitstatus = 128 + signal.SIGTERM
