"""Commands the plugin starts and waits for, and one helper it starts to outlive a
crash: the report's ``git rev-parse HEAD``, the sanitizer's ``compute-sanitizer
--version``, the MPI layer's GPU-aware probe (:func:`run_command`); the JAX
multi-process checks' ``mpiexec`` job (:func:`run_process_group`); a launched MPI
rank's crash reporter (:func:`start_crash_reporter`).

:func:`run_command`: the command runs to its end or is killed at its timeout
(``subprocess.run`` kills and reaps it), so none outlives the call that started it;
its output is read here, whole.  A command that cannot start or does not end in time
is no exception for the caller but the reason, one line, that the caller words for its
user (:class:`CommandTimeout` when it was the timeout).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_gpucheck.processes.guard import TERMINATE_GRACE


@dataclass(frozen=True)
class CommandOutput:
    """What a short command that ran to its end left: its exit code and its output."""

    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(str):
    """The reason :func:`run_command` gives for a command killed at its timeout (the
    text ``subprocess`` gives it), told apart from one that could not start."""


def run_command(args: Sequence[str], *, timeout: float, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> CommandOutput | str:
    """Run ``args`` (in ``cwd``, with ``env`` when given, no input) to its end and return
    its exit code and output (text), or why it did not run to its end: the ``OSError``
    that kept it from starting or the timeout it was killed at (``str`` of the
    exception, as the caller's line shows it; a :class:`CommandTimeout` for the
    timeout).  A negative exit code is the signal that ended it."""
    try:
        done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=False, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return CommandTimeout(exc)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return CommandOutput(done.returncode, done.stdout, done.stderr)


def run_process_group(args: Sequence[str], *, timeout: float,
                      env: dict[str, str] | None = None) -> tuple[int, str, bool]:
    """Run ``args`` in a process group of its own (a launcher and every rank it starts)
    to its end: (exit code, stdout and stderr together, whether it was killed).  A group
    that outlives ``timeout`` seconds is asked to end (SIGTERM to the group), then
    killed whole after :data:`TERMINATE_GRACE` seconds (SIGKILL: a rank that ignores its
    launcher's signals still ends), and its output read to the end.  SIGTERM first:
    MPICH's launcher removes the file it writes in ``/tmp`` (``hydra_hwloc_xmlfile_*``,
    a fixed folder, not ``TMPDIR``) when it ends by SIGTERM, not by SIGKILL, and every
    job killed outright left one there."""
    process = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output, False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    try:
        # Read on while it ends (no output is lost when communicate is called again).
        output, _ = process.communicate(timeout=TERMINATE_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    return process.returncode, output, True


def start_crash_reporter(args: Sequence[str], stdin: int) -> subprocess.Popen[bytes]:
    """Start a launched rank's crash reporter (``mpi/rank_session.py``): a process that
    reads ``stdin`` (the rank's pipe) until it closes, in a session of its own, so that
    the launcher's kill of the rank's job after a crash does not reach it before it has
    printed the rank's last words.  It ends when the pipe closes (the rank ended, or
    died); the rank waits for it and kills it if a forked child still holds the pipe."""
    return subprocess.Popen(list(args), stdin=stdin, start_new_session=True)
