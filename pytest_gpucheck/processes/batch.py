"""Batch runs: run a list of items, known in advance, in one child pytest (or one MPI job
under a launcher) and collect their reports.

The child is a plain ``python -m pytest TARGET...`` with the command line of
:mod:`~pytest_gpucheck.processes.child_options`; this plugin, loaded there too, streams each
report back (:mod:`~pytest_gpucheck.processes.worker`, over :mod:`~pytest_gpucheck.processes.wire`).
Verdicts stay honest when a child dies (``docs/reliability.md``): the child writes a
``started`` line before each item and points :mod:`faulthandler` at a file per rank, so
the caller can fail the item that was running (:mod:`~pytest_gpucheck.processes.deaths`)
and run the items it never reached in a fresh child.  The child kills its own process
group when the parent disappears, and the parent kills the child's group on SIGINT or
SIGTERM after keeping the finished results.  Long-lived children, which run items one
at a time, are :class:`~pytest_gpucheck.processes.pool.Worker`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from pytest_gpucheck.processes.child_options import (
    child_environment,
    forwarded_options,
    output_stream,
    plugin_options,
    stop_options,
)
from pytest_gpucheck.processes.guard import (
    Stopped,
    end_group,
    kill_group,
    scratch_directory,
    sigterm_raises,
)
from pytest_gpucheck.processes.replaying import apply_session_output
from pytest_gpucheck.processes.wire import ChildRun, child_target, read_reports, read_text

#: Seconds between two looks at a running child's reports (for progress lines).
PROGRESS_POLL = 5.0


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
    with scratch_directory("gpucheck-child-") as sink, \
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
        child_env = child_environment(config, env, stream_env, sink)
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
            timed_out = _watch(process, config, sink, targets, timeout=timeout,
                               on_progress=on_progress, on_interrupt=on_interrupt)
        run = ChildRun(process.returncode, read_text(output_path), timed_out)
        read_reports(config, sink, targets, run)
        apply_session_output(config, run.session_output)
        return run


def _watch(process: subprocess.Popen[str], config: pytest.Config, sink: str,
           targets: dict[str, str], *, timeout: float | None,
           on_progress: Callable[[ChildRun], None] | None,
           on_interrupt: Callable[[ChildRun], None] | None) -> bool:
    """Wait for the child ``process`` until it ends (False) or ``timeout`` passes (True:
    its group ended), its progress read every few seconds; on SIGINT or SIGTERM its group
    is ended, ``on_interrupt`` gets what it reported, and the interruption goes on.  Its
    process group is killed on the way out, whatever happened."""
    output_path = Path(sink) / "output.txt"
    try:
        def peek() -> None:
            if on_progress is not None:
                run = ChildRun(0, "", False)
                read_reports(config, sink, targets, run)
                on_progress(run)

        timed_out = not _wait(process, timeout, peek if on_progress else None)
        if timed_out:
            end_group(process)
        return timed_out
    except (KeyboardInterrupt, Stopped) as exc:
        end_group(process)
        run = ChildRun(process.returncode, read_text(output_path), False, interrupted=True)
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
