"""Nothing the plugin starts outlives the session.

Two sides of one guarantee (see ``docs/reliability.md``):

* in a child, :func:`start_orphan_guard` ends the child's process tree when
  the pytest that started it disappears (SIGKILL or a crash gives the parent
  no chance to clean up);
* in the parent, :func:`sigterm_raises` turns SIGTERM into an exception while
  a child runs, and :func:`end_group` / :func:`kill_group` end the child's
  whole process group (launcher, proxies, ranks).

And the temporary folders a process makes for its children (:func:`scratch_folder`)
carry its pid: a process killed outright removes nothing, so the next one to make such
a folder removes those whose process has died.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from pytest_gpucheck.environment import PARENT_VARIABLE, REPORT_SINK_VARIABLE

#: Seconds a child's process group gets to end after SIGTERM before SIGKILL.
TERMINATE_GRACE = 3.0
#: How often a child checks that the pytest process that started it is alive.
ORPHAN_POLL = 0.25


def start_orphan_guard(env: Mapping[str, str] | None = None) -> None:
    """In a child, end this child's process tree if the pytest that started it disappears.

    The parent kills its children on SIGINT and SIGTERM, but SIGKILL (or a
    crash) gives it no chance.  A daemon thread checks the parent's pid (on
    the parent's host only: ranks on other nodes cannot see it); when it is
    gone, the thread removes the report folder and kills the process group
    the parent created for this child (launcher, proxies and every local
    rank), or this process alone if the group is not the parent's.
    """
    env = os.environ if env is None else env
    parent = env.get(PARENT_VARIABLE, "")
    pid_text, _, host = parent.partition("@")
    if not pid_text.isdigit() or host != socket.gethostname():
        return
    parent_pid = int(pid_text)
    group = os.getpgrp()
    own_group = group if _parent_of(group) == parent_pid or group == os.getpid() else None
    sink = env.get(REPORT_SINK_VARIABLE, "")

    # A direct child sees its parent's death as a new parent pid; a rank (whose
    # parent is the launcher's proxy) checks the pid, zombies counted as dead.
    direct = os.getppid() == parent_pid

    def alive() -> bool:
        if direct:
            return os.getppid() == parent_pid
        return _alive(parent_pid)

    def watch() -> None:
        while alive():
            time.sleep(ORPHAN_POLL)
        if sink:
            shutil.rmtree(sink, ignore_errors=True)
        if own_group is not None:
            with contextlib.suppress(OSError):
                os.killpg(own_group, signal.SIGKILL)
        os._exit(128 + signal.SIGKILL)

    threading.Thread(target=watch, name="gpucheck-orphan-guard", daemon=True).start()


@functools.cache
def _proc_is_own() -> bool:
    """Whether ``/proc`` numbers processes as this process does.  In a PID namespace of
    its own that kept its parent's ``/proc`` (``unshare -p`` without a new mount), pid
    ``N`` of ``os.kill`` and ``/proc/N`` are two different processes: a live one's state
    would be read from another's, a zombie's say, and its folder removed."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _stat_fields(pid: int) -> list[str]:
    """Fields of ``/proc/<pid>/stat`` after the command name (Linux), or [] where they
    cannot be read or ``/proc`` is another PID namespace's (:func:`_proc_is_own`)."""
    if not _proc_is_own():
        return []
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name may contain spaces and parentheses: fields follow the last ')'.
    return text.rpartition(")")[2].split()


def _state_of(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def _parent_of(pid: int) -> int | None:
    """The parent pid of ``pid`` (Linux ``/proc``), or None where it cannot be read."""
    fields = _stat_fields(pid)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def scratch_folder(prefix: str) -> Path:
    """A new temporary folder for this process's children, ``<prefix><owner>-XXXXXXXX``,
    ``<owner>`` naming this process (:func:`_owner_tag`); first, once per prefix and
    process, the folders of that prefix left by processes that have died are removed
    (:func:`remove_orphaned_folders`).

    Why: a lead killed outright (CI's timeout, the OOM killer, ``kill -9``) cleans
    nothing up, and the benchmark gate's compiled-module folder (hypothesis and the
    plugin compiled, a few MB) or a child's report folder stayed in the temporary
    folder for good, one per killed run (issue 43).
    """
    if prefix not in _swept:
        _swept.add(prefix)
        remove_orphaned_folders(prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{_owner_tag()}-"))


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[str]:
    """A :func:`scratch_folder` for a ``with`` block (its path), removed at the block's end."""
    folder = scratch_folder(prefix)
    try:
        yield str(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphaned_folders(prefix: str) -> list[Path]:
    """Remove the :func:`scratch_folder` folders of ``prefix`` in the temporary folder
    whose process has died; the folders removed.  Kept: those of a live process, of
    another machine or PID namespace (a temporary folder shared over the network or
    with a container: its pids mean nothing here), of another user (whose processes
    this one cannot see die), links, and names without an owner (an older version's, or
    not ours).  Only on POSIX systems (elsewhere ``os.kill`` does not ask whether a
    process lives)."""
    if os.name != "posix":
        return []
    root = Path(tempfile.gettempdir())
    machine = _machine_tag()
    removed = []
    try:
        entries = list(root.glob(f"{prefix}*"))
    except OSError:
        return []
    for entry in entries:
        pid_text, dot, rest = entry.name[len(prefix):].partition(".")
        if not dot or not pid_text.isdigit() or rest.partition("-")[0] != machine:
            continue
        # Each entry on its own: another process may be removing the same ones.
        try:
            info = entry.lstat()
            if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
                    or _alive(int(pid_text))):
                continue
        except (OSError, OverflowError, ValueError):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


#: The prefixes :func:`scratch_folder` has swept in this process.
_swept: set[str] = set()


def _owner_tag() -> str:
    """``<pid>.<machine>``: which process made a folder, told apart from the same pid on
    another machine or in another container (:func:`_machine_tag`)."""
    return f"{os.getpid()}.{_machine_tag()}"


@functools.cache
def _machine_tag() -> str:
    """Eight hex digits naming this machine's boot and this process's PID namespace
    (the host name where Linux's ``/proc`` is missing): two machines sharing a temporary
    folder, or two containers with their own pids, never share it.  The root PID
    namespace has the same number on every Linux machine, so the boot's id and the
    host name go in too."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:8]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has died; another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state_of(pid) not in ("Z", "X")


class Stopped(Exception):
    """Raised in the main thread when SIGTERM arrives while a child runs."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While a child runs, turn SIGTERM into an exception (SIGINT already is one), so
    the child's process group is killed, its folder removed and finished results kept."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Stopped(f"stopped by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def end_group(process: subprocess.Popen[str]) -> None:
    """SIGTERM the child's process group (a launcher forwards it to remote ranks), then
    SIGKILL whatever is left of it after :data:`TERMINATE_GRACE` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=TERMINATE_GRACE)
    kill_group(process)
    process.wait()


def kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)

