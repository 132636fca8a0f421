"""Deaths: a child that died is never a green run, and the item it was running fails.

The failed reports made here for an item a child never finished (:func:`crash_text`,
:func:`failed_report`, :func:`missing_report`), the lines that say how a child ended
(:func:`describe_exit`; the summary's :func:`death_line` and
:func:`failed_outside_tests_line`, one wording for every router), and the session-end
hooks shared by the routers whose children may die (:class:`KeepsChildDeaths`: hand
the deaths to pytest-xdist's controller or fail the run, one red line each).  Standard
library and pytest only at load time, so a router can extend it while the
child-process machinery is imported only by runs that use it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from typing import Any, Protocol

import pytest

from pytest_gpucheck.processes.wire import ChildRun


class KeepsChildDeaths:
    """The session-end hooks of a router whose children may die: close them,
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
        from pytest_gpucheck.processes.guard import Stopped

        try:
            self.close_children()
        except (KeyboardInterrupt, Stopped) as exc:
            interrupted_at_the_end(session, exc)
        hand_over_deaths(self.config, session, self.deaths, self.DEATHS_OUTPUT)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist (controller): a worker ended; keep the deaths it handed over."""
        collect_deaths(node, self.deaths, self.DEATHS_OUTPUT)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return
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


def hand_over_deaths(config: pytest.Config, session: pytest.Session, deaths: list[str],
                     output_key: str) -> None:
    """At session end: under pytest-xdist, pass this worker's child deaths to the controller
    (``output_key`` of its worker output; the controller decides the exit status); a run
    in which a child died is never exit 0."""
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[output_key] = list(deaths)
    if deaths and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def collect_deaths(node: Any, deaths: list[str], output_key: str) -> None:
    """pytest-xdist controller, when a worker ended: keep the deaths it handed over."""
    output = getattr(node, "workeroutput", None) or {}
    deaths.extend(output.get(output_key, []))


def write_deaths(terminalreporter: Any, deaths: Sequence[str]) -> None:
    """One red summary line per child death."""
    for line in deaths:
        terminalreporter.write_line(f"gpucheck: {line}", red=True)


def describe_exit(returncode: int, *, launcher: bool = False) -> str:
    """``killed by signal 11 (SIGSEGV)`` / ``exited with code 3``, for messages."""
    if returncode < 0:
        return f"was killed by signal {-returncode} ({_signal_name(-returncode)})"
    text = f"exited with code {returncode}"
    if launcher and returncode > 128 and _signal_name(returncode - 128) != "?":
        # Launchers report a rank killed by signal N as 128 + N.
        text += f" (128 + {_signal_name(returncode - 128)}: a rank was killed by that signal)"
    return text


def death_line(what: str, returncode: int, crashed: pytest.Item | None = None, *,
               unstarted: bool = False, launcher: bool = False) -> str:
    """The summary's line for a child that died: what it was, how it ended, and when:
    while running ``crashed``, before running a test (``unstarted``: items were left
    that it never started), or after its last test."""
    when = (f"while running {crashed.nodeid}" if crashed is not None
            else "before running a test" if unstarted else "after its last test")
    return f"{what} {describe_exit(returncode, launcher=launcher)} {when}"


def failed_outside_tests_line(what: str, returncode: int, output: str) -> str:
    """The summary's line for a child that exited non-zero with every test passed:
    something failed outside the tests (a benchmark save, a session hook), and its own
    last lines say what."""
    return (f"{what} exited with code {returncode} although its tests passed; "
            f"its last lines:\n{output_tail(output, 10)}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "?"


def failed_report(item: pytest.Item, text: str, when: str = "call") -> pytest.TestReport:
    """A failed report of ``item`` made here, with ``text`` as its failure (and its
    matrix cell, so a crash counts in the conformance matrix).  The item ran in a child
    process of the plugin's, so it is one of the plugin's items (``gpucheck_ours``): its
    crash is listed with the other failures and in the job summary."""
    from pytest_gpucheck.reporting.report import cell_of

    report = pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome="failed",
        longrepr=text,
        when=when,  # type: ignore[arg-type]
        sections=[],
        duration=0.0,
        start=0.0,
        stop=0.0,
    )
    report.gpucheck_ours = True  # type: ignore[attr-defined]
    cell = cell_of(item)
    if cell is not None:
        report.gpucheck_cell = cell  # type: ignore[attr-defined]
    # As the plugin marks a failure made in the item's own process: where a CI annotation
    # points, and what reruns it from the user's folder (not the node id, which for a
    # bundled suite names no file the user has).
    from pytest_gpucheck.reporting import ci

    report.gpucheck_where = ci.blame_location(item)  # type: ignore[attr-defined]
    report.gpucheck_rerun = ci.rerun_target(item)  # type: ignore[attr-defined]
    return report


def output_tail(output: str, lines: int = 40) -> str:
    return "\n".join(output.splitlines()[-lines:])


def crash_text(item: pytest.Item, run: ChildRun, what: str, *, launcher: bool = False,
               ranks: Sequence[int] = ()) -> str:
    """Why ``item`` (started in ``run`` and never finished) has no result: how the
    process ended, on which rank, and faulthandler's whole stack of the crash."""
    how = "timed out and was killed" if run.timed_out else describe_exit(
        run.returncode, launcher=launcher)
    faulted = sorted(run.faults)
    lines = [f"{what} {how} while running this test; it never reported a result."]
    if launcher:
        if faulted:
            lines.append(f"Fatal error on rank(s) {', '.join(map(str, faulted))}.")
        elif ranks:
            lines.append(f"Started on rank(s) {', '.join(map(str, ranks))}; no rank recorded "
                         "a fatal error (an exit or abort without a signal): see the output.")
    for rank in faulted:
        prefix = f"rank {rank}: " if launcher else ""
        lines += ["", f"{prefix}faulthandler (the crash site, every thread):", run.faults[rank]]
    lines += ["", f"Last lines of its output:\n{output_tail(run.output)}"]
    return "\n".join(lines)


def missing_report(item: pytest.Item, run: ChildRun, what: str) -> pytest.TestReport:
    """A failed report for an item a child that failed as a whole never started
    (start-up, usage or collection error)."""
    how = "timed out" if run.timed_out else describe_exit(run.returncode)
    errors = "".join(str(r.longrepr) + "\n" for r in run.collect_errors)
    return failed_report(
        item, f"{what} {how} before running this test.\n{errors}{output_tail(run.output)}")
