"""The controller side: run test items in a child pytest process and replay their reports here.

Two features need a process of their own: the Numba CUDA simulator (chosen
when ``numba.cuda`` is first imported, so it cannot share a process with real
``numba-cuda``) and MPI tests spawned under a launcher.  The child is a plain
``python -m pytest NODEID...``; this plugin, loaded there too, streams each
test report back (:mod:`.worker`, over :mod:`.wire`).  The parent rebuilds the
reports and logs them as if the items had run in-process, so the user sees
ordinary results, tracebacks and sections.

Verdicts stay honest when a child dies (see ``docs/reliability.md``): the
child writes a ``started`` line before each item and points
:mod:`faulthandler` at a file per rank, so the item that was running when it
died fails with the signal or exit code and the whole fatal-error stack, and
the items it never reached run again in a fresh child.  The child loads the
``conftest.py`` files the parent loaded (registrations, hypothesis profiles),
kills its own process group when the parent disappears, and the parent kills
the child's group on SIGINT or SIGTERM after keeping the finished results.

Under the parent's ``-s`` a child started without a launcher writes what its
tests print to the parent's terminal while they run (:func:`output_stream`
here, :class:`~.worker.OutputStream` there).  Long-lived children are
:class:`~.pool.Worker`; which items go to a child is the routers' choice
(:mod:`.routers`).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.environment import (
    CONFTESTS_VARIABLE,
    JUNIT_VARIABLE,
    PARENT_VARIABLE,
    REPORT_SINK_VARIABLE,
    SERVE_VARIABLE,
    STREAM_VARIABLE,
)
from pytest_gpucheck.processes.guard import Stopped, end_group, kill_group, sigterm_raises
from pytest_gpucheck.processes.wire import (
    ITEM_SERVER,
    ChildRun,
    child_target,
    read_reports,
    read_text,
    warning_message,
)
from pytest_gpucheck.processes.worker import SuiteProperties

#: Seconds between two looks at a running child's reports (for progress lines).
PROGRESS_POLL = 5.0


def loaded_conftests(config: pytest.Config) -> list[str]:
    """Absolute paths of the ``conftest.py`` modules registered in this session."""
    return [
        name
        for name, plugin in config.pluginmanager.list_name_plugin()
        if isinstance(name, str)
        and os.path.basename(name) == "conftest.py"
        and os.path.isabs(name)
        and getattr(plugin, "__file__", None) is not None
    ]


# -- the parent's side --------------------------------------------------------------------


# -- deaths: a child that died is never a green run ------------------------------------------
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


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "?"


def forwarded_options(config: pytest.Config) -> list[str]:
    """Options of this run that a child must share to collect and run the same items.

    The core's own options are listed here; each feature plugin adds its own
    through the ``pytest_gpucheck_child_args`` hook (:mod:`pytest_gpucheck.hookspecs`);
    every other option the user gave is forwarded or not by the table of
    :mod:`pytest_gpucheck.processes.child_options`.  The child skips the ini file's ``addopts``:
    they reach it through that table like the command line's.
    """
    from pytest_gpucheck.processes.child_options import child_options

    args = ["-o", "addopts=", *child_options(config), "--rootdir", str(config.rootpath)]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        args.append("-n0")  # the parent already distributes; the child runs serially
    args.append("--gpu-isolate=none")  # a child is the isolation: it never starts workers
    for dest, flag in (
        ("hypothesis_profile", "--hypothesis-profile"),
        ("hypothesis_seed", "--hypothesis-seed"),
        ("gpu_device", "--gpu-device"),
        ("gpu_impls", "--gpu-impls"),
    ):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={value}")
    for feature_args in config.hook.pytest_gpucheck_child_args(config=config):
        args += feature_args
    return args


def stop_options(config: pytest.Config, session: pytest.Session | None) -> list[str]:
    """``--maxfail`` for a child that runs a batch of items: it stops after the failures
    this session may still have, so no item starts after the one that ends the run
    (a long-lived worker needs none: it runs only what it is sent)."""
    maxfail = int(config.getoption("maxfail", 0) or 0)
    if not maxfail:
        return []
    failed = session.testsfailed if session is not None else 0
    return [f"--maxfail={max(1, maxfail - failed)}"]


def backends_option(config: pytest.Config, names: Sequence[str] = ()) -> list[str]:
    """The child's ``--gpu-backends`` argument: ``names`` when given (a child that runs
    one backend's items), else this run's own option as the user wrote it (none if unset)."""
    if names:
        return [f"--gpu-backends={','.join(names)}"]
    value = config.getoption("gpu_backends", None)
    return [] if value is None else [f"--gpu-backends={value}"]


def plugin_options(config: pytest.Config) -> list[str]:
    """``-p`` options of this run; they must be on the child's real command line,
    because pytest reads them before it expands an ``@argsfile``."""
    from pytest_gpucheck.processes.child_options import ARGS_KEY

    options = ["-p", "no:cacheprovider"]
    # Every argument parsed, the ini file's addopts included (the child skips those).
    parsed = config.stash.get(ARGS_KEY, None) or [str(a) for a in config.invocation_params.args]
    for plugin in _explicit_plugins(parsed):
        options += ["-p", plugin]
    return options


def _explicit_plugins(args: Iterable[str]) -> list[str]:
    plugins, pending = [], False
    for arg in args:
        if pending:
            plugins.append(arg)
            pending = False
        elif arg == "-p":
            pending = True
        elif arg.startswith("-p") and len(arg) > 2:
            plugins.append(arg[2:])
    return [p for p in plugins if not p.startswith("no:")]


def run_child_pytest(
    config: pytest.Config,
    items: Sequence[pytest.Item],
    *,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str] = (),
    timeout: float | None = None,
    on_progress: Callable[[ChildRun], None] | None = None,
    on_interrupt: Callable[[ChildRun], None] | None = None,
) -> ChildRun:
    """Run ``items`` in ``[*launcher, python, -m, pytest, ...]`` and collect their reports.

    The child selects each item by its file path and id (:func:`child_target`),
    so items of files outside the rootdir (the bundled suites under
    ``--gpu-conformance``) are found too; its reports carry this session's
    node ids.

    ``env`` entries are added to this process's environment.  On timeout the
    whole process group (launcher and every rank) is killed, so nothing is
    left behind, and ``timed_out`` is set; the reports written until then are
    still returned.  On SIGINT or SIGTERM the group is killed too,
    ``on_interrupt`` gets what the child reported until then, and the
    interruption goes on (SIGTERM as ``pytest.exit`` with code 143).
    ``on_progress`` is called every few seconds with what the child reported so far.
    """
    with tempfile.TemporaryDirectory(prefix="gpucheck-child-") as sink, \
            output_stream(config, launcher) as (stream_env, stream_fds, stream_args):
        args_file = Path(sink) / "args.txt"
        targets = {child_target(item): item.nodeid for item in items}
        session = items[0].session if items else None
        args_file.write_text("\n".join([*targets, *forwarded_options(config), *extra_args,
                                        *stream_args, *stop_options(config, session)]))
        command = [
            *launcher,
            sys.executable,
            "-m",
            "pytest",
            *plugin_options(config),
            f"@{args_file}",
        ]
        child_env = {
            **os.environ,
            **(env or {}),
            **stream_env,
            **junit_env(config),
            REPORT_SINK_VARIABLE: sink,
            PARENT_VARIABLE: f"{os.getpid()}@{socket.gethostname()}",
            CONFTESTS_VARIABLE: json.dumps(loaded_conftests(config)),
        }
        child_env.pop("PYTEST_XDIST_WORKER", None)
        child_env.pop("PYTEST_ADDOPTS", None)
        child_env.pop(SERVE_VARIABLE, None)  # a worker's pipes are its own, not its jobs'
        if not stream_env:
            child_env.pop(STREAM_VARIABLE, None)
        if not junit_env(config):
            child_env.pop(JUNIT_VARIABLE, None)
        output_path = Path(sink) / "output.txt"
        with sigterm_raises(), output_path.open("w+", encoding="utf-8") as output_file:
            process = subprocess.Popen(
                command,
                cwd=config.rootpath,
                env=child_env,
                stdout=output_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,  # its own process group, so a timeout kills every rank
                pass_fds=stream_fds,
            )
            timed_out = False
            try:
                def peek() -> None:
                    if on_progress is not None:
                        run = ChildRun(0, "", False)
                        read_reports(config, sink, targets, run)
                        on_progress(run)

                timed_out = not _wait(process, timeout, peek if on_progress else None)
                if timed_out:
                    end_group(process)
            except (KeyboardInterrupt, Stopped) as exc:
                end_group(process)
                run = ChildRun(process.returncode, read_text(output_path), False,
                               interrupted=True)
                read_reports(config, sink, targets, run)
                if on_interrupt is not None:
                    on_interrupt(run)
                if isinstance(exc, Stopped):
                    raise pytest.exit.Exception(
                        f"gpucheck: {exc}; the child processes were ended",
                        returncode=128 + signal.SIGTERM) from None
                raise
            except BaseException:
                end_group(process)
                raise
            finally:
                # A rank or helper that outlived the launcher is still in the group.
                kill_group(process)
        run = ChildRun(process.returncode, read_text(output_path), timed_out)
        read_reports(config, sink, targets, run)
        apply_session_output(config, run.session_output)
        return run


def _wait(process: subprocess.Popen[str], timeout: float | None,
          poll: Callable[[], None] | None) -> bool:
    """Wait for ``process``, calling ``poll`` every few seconds; False if ``timeout``
    passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = PROGRESS_POLL if poll is not None else None
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            step = left if step is None else min(step, left)
        try:
            process.wait(timeout=step)
            return True
        except subprocess.TimeoutExpired:
            if poll is not None:
                poll()


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


def junit_env(config: pytest.Config) -> dict[str, str]:
    """A child's environment entry that says this run writes a junit file (see
    :data:`~pytest_gpucheck.environment.JUNIT_VARIABLE`); empty when it does not."""
    from _pytest.junitxml import xml_key  # private: where pytest keeps its LogXML

    xml = config.stash.get(xml_key, None)
    family = getattr(xml, "family", None)
    return {JUNIT_VARIABLE: str(family)} if family else {}


_MPI_STREAM_NOTED = pytest.StashKey[bool]()


def streaming(config: pytest.Config) -> bool:
    """Whether this run shows what tests print as they print it (``-s``)."""
    return config.getoption("capture", "fd") == "no"


@contextlib.contextmanager
def output_stream(config: pytest.Config, launcher: Sequence[str] = ()
                  ) -> Generator[tuple[dict[str, str], list[int], list[str]], None, None]:
    """For a child about to start: the environment, descriptors to pass and arguments that
    stream its tests' output to this process's terminal under ``-s`` (nothing otherwise).

    Under a launcher the ranks' descriptors are the launcher's, so nothing streams: the
    ranks capture as usual and their output is in each test's report sections.
    """
    if not streaming(config) or launcher:
        if streaming(config) and not config.stash.get(_MPI_STREAM_NOTED, False):
            config.stash[_MPI_STREAM_NOTED] = True
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    "gpucheck: -s does not stream what MPI ranks print (the launcher owns "
                    "their output): it is in each test's captured sections (-rA shows them)")
        # The user's -s reaches every child through the option table; ranks capture anyway,
        # or what they print would be lost in the launcher's output.
        yield {}, [], ["--capture=fd"] if streaming(config) else []
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()  # what this process wrote comes before what the child writes
    fds = [os.dup(1), os.dup(2)]
    try:
        yield {STREAM_VARIABLE: f"{fds[0]},{fds[1]}"}, fds, ["--capture=no"]
    finally:
        for fd in fds:
            os.close(fd)  # the child has its copies


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


def failed_report(item: pytest.Item, text: str, when: str = "call") -> pytest.TestReport:
    """A failed report of ``item`` made here, with ``text`` as its failure (and its
    matrix cell, so a crash counts in the conformance matrix)."""
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
    cell = cell_of(item)
    if cell is not None:
        report.gpucheck_cell = cell  # type: ignore[attr-defined]
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
