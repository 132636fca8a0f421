"""Stop an MPI test that cannot finish, say which ranks were stuck and where, leave nothing behind.

A rank blocked in MPI (a ``Recv`` that never comes, a ``Barrier`` a failed
peer never reaches) cannot be interrupted.  Each rank therefore runs a watchdog
thread while an ``mpi`` test runs.  It stops the job when

* the test's **timeout** passes, or
* this rank **failed** and its peers have not reached the end of the test
  ``failure_grace`` seconds later (they are most likely blocked waiting for it),
  or
* a distributed check **raised on this rank** inside a test that goes on
  (hypothesis draws the next example: :func:`rank_local_failure`) and the ranks
  did not meet again in a collective (:func:`ranks_in_step`) within
  ``out_of_step_grace`` seconds: one rank waits in the next example's
  ``allgather`` while another still waits in the failed example's ``Allreduce``,
  so the job is stopped with the raising rank and its exception named, not
  after the test's timeout, or
* another rank's watchdog **alerts** it.

Then every rank's watchdog snapshots its main thread's stack and what it was
doing (running the test, or waiting for the others), sends that to rank 0 on a
communicator of its own, and rank 0 prints one report and calls ``MPI_Abort``,
which makes the launcher kill every rank.  mpi4py releases the GIL while it
waits in MPI, so the thread can run; for a rank stuck in C code that holds the
GIL, ``faulthandler`` is armed a little later as a last resort (it dumps the
stack and exits the process, which ends the job too).
"""

from __future__ import annotations

import contextlib
import faulthandler
import linecache
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from pytest_gpucheck.mpi.outcome import cause_of

BEGIN_MARK = "=" * 20 + " gpucheck mpi: job stopped " + "=" * 20
END_MARK = "=" * 20 + " end of gpucheck mpi report " + "=" * 20
TEST_LINE = "test: "
#: The report's line of why the job stopped, short: the failure's first line in spawned
#: mode, the one pytest's short summary shows (:func:`stop_reason`).
CAUSE_LINE = "cause: "
_ALERT, _SNAPSHOT, _ACK = 7301, 7302, 7303
_POLL = 0.05

#: States a rank reports; ranks RUNNING when the job is stopped are the stuck ones.
RUNNING = "running the test"
WAITING = "waiting for the other ranks"


@dataclass(frozen=True)
class Snapshot:
    """One rank's answer when the job is stopped."""

    rank: int
    host: str
    pid: int
    state: str
    stack: str
    failure: str = ""  # this rank's failure text, if its test failed
    mpi_call: str = ""  # the mpi4py method the test's current line calls (blocked in MPI?)


#: The names of the plugin's own threads start so (the orphan guard, the watchdog):
#: their stacks are the same in every report and say nothing about the test.
OWN_THREADS = "gpucheck-"


def other_threads_stacks() -> str:
    """The Python stack of every thread but the calling one and the plugin's own, the
    main thread first."""
    frames = sys._current_frames()
    me = threading.get_ident()
    main = threading.main_thread().ident
    names = {t.ident: t.name for t in threading.enumerate()}
    order = sorted((ident for ident in frames if ident != me
                    and not str(names.get(ident, "")).startswith(OWN_THREADS)),
                   key=lambda i: i != main)
    return "".join(
        f"Thread {names.get(i, i)} (most recent call last):\n"
        + "".join(traceback.format_list(_user_frames(traceback.extract_stack(frames[i]))))
        for i in order
    )


_HARNESS = ("_pytest", "pluggy", "<frozen runpy>", f"pytest{os.sep}__main__")
_CALLED = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")


def main_thread_mpi_call(mpi_names: frozenset[str]) -> str:
    """The mpi4py method that the main thread's current line calls, or "".

    A rank blocked in MPI has no Python frame below that line (mpi4py's
    methods are compiled), so the innermost frame's line names the call.  This
    tells a rank that waits in ``Barrier`` for a hung peer from the hung peer
    itself.  A line that calls something else too may be misnamed; the stacks
    in the report are the ground truth.
    """
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if frame is None:
        return ""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    called = [name for name in _CALLED.findall(line) if name in mpi_names]
    return called[-1] if called else ""


def mpi_method_names() -> frozenset[str]:
    """The methods of mpi4py's communicators and requests (the calls that can block)."""
    from mpi4py import MPI

    names = {n for kind in (MPI.Comm, MPI.Intracomm) for n in dir(kind)
             if not n.startswith(("_", "Get_", "Set_", "Is_", "py2f", "f2py"))}
    # Requests' waits; not Win or File methods, whose names (Get, Lock, Read, ...) are
    # too common elsewhere.
    names.update(n for n in dir(MPI.Request) if n.lower().startswith("wait"))
    return frozenset(names - {"rank", "size", "group", "info", "name", "topology"})


def _user_frames(stack: traceback.StackSummary) -> list[traceback.FrameSummary]:
    """Drop the pytest/pluggy frames above the test: they are the same on every rank."""
    frames = list(stack)
    last_harness = max(
        (i for i, f in enumerate(frames) if any(h in f.filename for h in _HARNESS)), default=-1
    )
    return frames[last_harness + 1 :] or frames


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) or "none"


def format_report(nodeid: str, timeout: float, grace: float, size: int,
                  snapshots: list[Snapshot]) -> str:
    """The report: why the job was stopped, which ranks were stuck, then each rank's stack."""
    by_rank = {s.rank: s for s in snapshots}
    failed = [s.rank for s in snapshots if s.failure]
    running = [s for s in snapshots if not s.failure and s.state.startswith(RUNNING)]
    stuck = [s.rank for s in running]
    in_mpi: list[Snapshot] = []
    if not failed and any(not s.mpi_call for s in running):
        # Some ranks run the test's own code, the others wait in MPI, most likely
        # for them: name the former as the hung ones.
        in_mpi = [s for s in running if s.mpi_call]
        stuck = [s.rank for s in running if not s.mpi_call]
    waiting = [s.rank for s in snapshots if not s.failure and not s.state.startswith(RUNNING)]
    silent = [r for r in range(size) if r not in by_rank]
    if failed:
        first = by_rank[failed[0]]
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        cause = f"rank {first.rank}{more} failed: {cause_of(first.failure)}"
        why = (f"rank(s) {_ranks(failed)} failed and rank(s) {_ranks(stuck)} did not reach the "
               f"end of the test within {grace:g} s (blocked waiting for the failed rank?)")
    else:
        cause = (f"timeout of {timeout:g} s, rank(s) {_ranks(stuck)} hung" if stuck or not silent
                 else f"timeout of {timeout:g} s, rank(s) {_ranks(silent)} not answering")
        why = (f"the test did not finish within its timeout of {timeout:g} s; "
               f"hung (still running the test): rank(s) {_ranks(stuck)}")
    lines = [BEGIN_MARK, f"{TEST_LINE}{nodeid}", f"{CAUSE_LINE}{cause}", why]
    if in_mpi:
        calls = ", ".join(f"{s.rank} ({s.mpi_call})" for s in in_mpi)
        lines.append(f"blocked in an MPI call of the test, most likely waiting for them: "
                     f"rank(s) {calls}")
    lines.append(f"waiting for the other ranks: rank(s) {_ranks(waiting)}")
    if silent:
        lines.append(f"no answer (blocked while holding the GIL; see the faulthandler dump): "
                     f"rank(s) {_ranks(silent)}")
    for snap in sorted(snapshots, key=lambda s: s.rank):
        state = "FAILED" if snap.failure else snap.state + (
            f" (in MPI: {snap.mpi_call})" if snap.mpi_call else "")
        lines.append(f"{'-' * 16} rank {snap.rank} (host {snap.host}, pid {snap.pid}): {state} "
                     f"{'-' * 16}")
        if snap.failure:
            lines.append(snap.failure.rstrip())
        else:
            lines.append(snap.stack.rstrip())
    lines.append(f"Aborted the MPI job of {size} rank(s) (MPI_Abort) so that no rank is left "
                 "behind.")
    lines.append(END_MARK)
    return "\n".join(lines)


def extract_report(output: str) -> str | None:
    """The first report in a job's output and all that follows, or None (for spawned mode)."""
    start = output.find(BEGIN_MARK)
    if start < 0:
        return None
    # Everything from there on: a rank whose watchdog could not run adds its
    # faulthandler dump after the report.
    return output[start:].rstrip()


def stop_reason(report: str) -> str:
    """Why the job was stopped, in one short line: ``timeout of 5 s, rank(s) 1 hung`` or
    ``rank 1 failed: ZeroDivisionError: ...`` (the report's ``cause:`` line)."""
    for line in report.splitlines():
        if line.startswith(CAUSE_LINE):
            return line[len(CAUSE_LINE):]
    return ""


def reported_test(report: str) -> str:
    """The node id a report is about."""
    for line in report.splitlines():
        if line.startswith(TEST_LINE):
            return line[len(TEST_LINE):]
    return ""


class Watchdog:
    """One per rank: a daemon thread that stops the job when a test cannot finish."""

    def __init__(self, comm: Any, host: str, stream: TextIO, *, grace: float = 5.0,
                 failure_grace: float = 2.0, out_of_step_grace: float = 10.0,
                 faulthandler_backstop: bool = True,
                 session_so_far: Callable[[], str] | None = None) -> None:
        self.comm = comm  # a Dup of COMM_WORLD used only by the watchdogs
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.host = host
        self.stream = stream  # the real stderr, not pytest's capture of it
        self.grace = grace
        self.failure_grace = failure_grace
        # Long enough for a peer that raises the same exception a little later (a first
        # JIT compile on a larger block) to reach the next collective, short against the
        # test's timeout.
        self.out_of_step_grace = out_of_step_grace
        self._grace_given = failure_grace  # the grace of the pending failure, for the report
        self.faulthandler_backstop = faulthandler_backstop
        # Rank 0 prints it before aborting: the results the abort would otherwise lose.
        self.session_so_far = session_so_far
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._failure_deadline: float | None = None
        self._failure = ""
        self._nodeid = ""
        self._timeout = 0.0
        self._state = RUNNING
        self._mpi_names = mpi_method_names()
        self._thread = threading.Thread(target=self._run, name="gpucheck-mpi-watchdog",
                                        daemon=True)
        self._thread.start()
        _ACTIVE[:] = [self]

    def arm(self, nodeid: str, timeout: float) -> None:
        """Start the clock for ``nodeid``."""
        with self._lock:
            self._nodeid, self._timeout, self._state = nodeid, timeout, RUNNING
            self._deadline = time.monotonic() + timeout
            self._failure_deadline, self._failure = None, ""
        if self.faulthandler_backstop:
            faulthandler.dump_traceback_later(timeout + 2 * self.grace, exit=True,
                                              file=self.stream)

    def state(self, state: str) -> None:
        """Record what this rank is doing (RUNNING or WAITING)."""
        with self._lock:
            self._state = state

    def failed(self, text: str) -> None:
        """This rank failed: the others get ``failure_grace`` seconds to reach the exchange."""
        with self._lock:
            self._failure, self._grace_given = text, self.failure_grace
            self._failure_deadline = time.monotonic() + self.failure_grace

    def raised_alone(self, text: str) -> None:
        """This rank raised in a test that goes on: stop the job unless the ranks meet in a
        collective (:meth:`in_step`) within ``out_of_step_grace`` seconds."""
        with self._lock:
            if self._deadline is None:  # not inside an MPI test: nothing to keep in step
                return
            self._failure, self._grace_given = text, self.out_of_step_grace
            self._failure_deadline = time.monotonic() + self.out_of_step_grace

    def in_step(self) -> None:
        """Every rank completed the same collective: none is blocked on this one."""
        with self._lock:
            self._failure_deadline, self._failure = None, ""

    def exchanged(self) -> None:
        """Every rank reached the outcome exchange: nobody is blocked on a failed rank."""
        with self._lock:
            self._failure_deadline = None

    def disarm(self) -> None:
        with self._lock:
            self._deadline = self._failure_deadline = None
        if self.faulthandler_backstop:
            faulthandler.cancel_dump_traceback_later()

    def _run(self) -> None:
        from mpi4py import MPI

        while True:
            time.sleep(_POLL)
            now = time.monotonic()
            with self._lock:
                armed = self._deadline is not None
                local = (armed and now >= self._deadline) or (  # type: ignore[operator]
                    self._failure_deadline is not None and now >= self._failure_deadline)
            # Peers alert only during a test that every rank is in, so between tests
            # this thread stays off the MPI library altogether.
            alerted = armed and self.comm.iprobe(source=MPI.ANY_SOURCE, tag=_ALERT)
            if local or alerted:
                self._stop_job(alert_others=local)
                return

    def _stop_job(self, *, alert_others: bool) -> None:
        if self.faulthandler_backstop:
            faulthandler.cancel_dump_traceback_later()  # this thread runs: no backstop needed
        try:
            if alert_others:
                for other in range(self.size):
                    if other != self.rank:
                        self.comm.isend(None, dest=other, tag=_ALERT)
            with self._lock:
                mine = Snapshot(self.rank, self.host, os.getpid(), self._state,
                                other_threads_stacks(), self._failure,
                                main_thread_mpi_call(self._mpi_names))
                nodeid, timeout, grace = self._nodeid, self._timeout, self._grace_given
            if self.rank == 0:
                snapshots = [mine, *self._collect()]
                self._write(format_report(nodeid, timeout, grace, self.size,
                                          snapshots))
                if self.session_so_far is not None:
                    with contextlib.suppress(Exception):  # never in the way of the abort
                        self._write(self.session_so_far())
                return
            self.comm.isend(mine, dest=0, tag=_SNAPSHOT)
            if _wait_for(lambda: self.comm.iprobe(source=0, tag=_ACK), self.grace):
                time.sleep(self.grace)  # rank 0 printed the report and is aborting the job
                return
            # Rank 0's watchdog cannot run (blocked holding the GIL): print this rank's
            # view, then leave rank 0's faulthandler backstop the time to dump its stack.
            self._write(format_report(nodeid, timeout, grace, self.size, [mine]))
            time.sleep(2 * self.grace)
        finally:
            self.comm.Abort(1)

    def _collect(self) -> list[Snapshot]:
        pending = set(range(1, self.size))
        found: list[Snapshot] = []
        give_up = time.monotonic() + self.grace
        while pending and time.monotonic() < give_up:
            for source in sorted(pending):
                if self.comm.iprobe(source=source, tag=_SNAPSHOT):
                    found.append(self.comm.recv(source=source, tag=_SNAPSHOT))
                    self.comm.isend(None, dest=source, tag=_ACK)
                    pending.discard(source)
            time.sleep(0.01)
        return found

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


#: The watchdog of this process's rank session (none outside a rank of an MPI job).
_ACTIVE: list[Watchdog] = []


def rank_local_failure(text: str) -> None:
    """This rank raised ``text`` inside a distributed check of a test that goes on.

    Its peers may be blocked in a collective this rank will never call; unless the
    ranks meet again in one (:func:`ranks_in_step`) within the watchdog's
    ``out_of_step_grace``, the job is stopped, naming this rank and ``text``.  A no-op
    outside an MPI rank session.
    """
    for watchdog in _ACTIVE:
        watchdog.raised_alone(text)


def ranks_in_step() -> None:
    """Every rank has just completed the same collective: clear :func:`rank_local_failure`."""
    for watchdog in _ACTIVE:
        watchdog.in_step()


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        if condition():
            return True
        time.sleep(0.01)
    return False
