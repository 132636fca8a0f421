"""Long-lived workers, the parent's side: a child pytest that runs the items it is sent,
one at a time (the child's side is :class:`~.worker.ItemServer`).

A batch child (:func:`pytest_gpucheck.processes.batch.run_child_pytest`) runs a list
known in advance.  A pytest-xdist worker learns its items one by one, and an
isolation worker must stop after the item that poisoned it, so both use a
:class:`Worker`: one ``python -m pytest`` that collects every item it may be
asked for, then reads node targets from a pipe, runs each and answers on a
second pipe.  Each request names the item the parent will send next when it
knows it, so the fixtures they share stay up as in a plain run.  Reports
travel as in a batch child (the report sink), so the verdict rules are the
same: an item the worker started and never finished fails with the signal or
exit code and faulthandler's stack; an item it never started runs in a fresh
worker and is never blamed.

After a failed item the worker calls the backend's
:meth:`~pytest_gpucheck.backends.base.Backend.health_check` (a synchronize
and a tiny allocation); when that raises, the context is poisoned (a CUDA
sticky error), the worker says so and exits, and the next item starts a fresh
worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_gpucheck.environment import SERVE_VARIABLE
from pytest_gpucheck.processes.child_options import (
    child_environment,
    forwarded_options,
    output_stream,
    plugin_options,
)
from pytest_gpucheck.processes.deaths import (
    crash_text,
    death_line,
    failed_outside_tests_line,
    failed_report,
    missing_report,
)
from pytest_gpucheck.processes.guard import (
    Stopped,
    end_group,
    kill_group,
    scratch_folder,
    sigterm_raises,
)
from pytest_gpucheck.processes.replaying import apply_session_output
from pytest_gpucheck.processes.wire import ChildRun, child_target, read_reports, read_text

#: Seconds a worker gets to finish its session after its last item.
CLOSE_GRACE = 60.0
#: How often the parent looks whether a silent worker is still alive.
POLL = 1.0


class Worker:
    """Parent-side handle of one long-lived worker (started on first use, replaced after
    a crash or a poisoned context).

    ``universe`` is every item the worker may be asked to run (it collects them
    all once); :meth:`run` returns one item's reports, made honest when the
    worker died on it.  ``deaths`` gets one line per worker that died.
    """

    def __init__(self, config: pytest.Config, universe: Sequence[pytest.Item], *,
                 what: str, extra_args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, deaths: list[str]) -> None:
        self.config = config
        self.targets = {child_target(item): item.nodeid for item in universe}
        self.what = what
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.deaths = deaths
        self.process: subprocess.Popen[str] | None = None
        self.sink = ""
        self._requests: IO[str] | None = None
        self._replies: IO[str] | None = None
        self._offsets: dict[str, int] = {}
        self._run = ChildRun(0, "", False)
        self._failures = 0
        self._served = 0

    # -- lifetime --------------------------------------------------------------------------
    def launcher_args(self) -> list[str]:
        """What the worker's command starts with, before ``python -m pytest`` (nothing
        here; a sanitized worker runs under compute-sanitizer)."""
        return []

    def _start(self) -> None:
        self.sink = str(scratch_folder("gpucheck-child-"))
        with output_stream(self.config) as (stream_env, stream_fds, stream_args):
            args_file = Path(self.sink) / "args.txt"
            args_file.write_text("\n".join([*self.targets, *forwarded_options(self.config),
                                            *self.extra_args, *stream_args]))
            requests_read, requests_write = os.pipe()
            replies_read, replies_write = os.pipe()
            env = child_environment(self.config, self.env, stream_env, self.sink)
            env[SERVE_VARIABLE] = f"{requests_read},{replies_write}"  # its own pipes
            output = (Path(self.sink) / "output.txt").open("w", encoding="utf-8")
            try:
                self.process = subprocess.Popen(
                    [*self.launcher_args(), sys.executable, "-m", "pytest",
                     *plugin_options(self.config), f"@{args_file}"],
                    cwd=self.config.rootpath, env=env, stdout=output, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                    pass_fds=(requests_read, replies_write, *stream_fds))
            finally:
                output.close()
                os.close(requests_read)
                os.close(replies_write)
        self._requests = os.fdopen(requests_write, "w", encoding="utf-8")
        self._replies = os.fdopen(replies_read, "r", encoding="utf-8")
        self._offsets = {}
        self._run = ChildRun(0, "", False)
        self._failures = 0
        self._served = 0

    def start(self) -> None:
        """Start the worker now, before its first item (a no-op when it runs)."""
        if self.process is None:
            self._start()

    def release(self) -> None:
        """Send no more requests: the worker finishes its session and exits on its own
        (freeing its device memory) while this process goes on; :meth:`close` later
        waits for it, keeps its death if it had one and removes its folder."""
        with contextlib.suppress(OSError):
            if self._requests is not None:
                self._requests.close()  # end of requests: the worker's session ends

    def close(self) -> None:
        """Let the worker finish its session (teardown, exit), then remove its folder."""
        process = self.process
        if process is None:
            return
        try:
            # SIGTERM raises from before the worker is told to end: the signal may come as
            # soon as the worker's session ends.
            with sigterm_raises():
                with contextlib.suppress(OSError):
                    if self._requests is not None:
                        self._requests.close()  # end of requests: the worker's session ends
                process.wait(timeout=CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            end_group(process)
        except BaseException:
            self.stop()
            raise
        kill_group(process)
        self._collect()
        apply_session_output(self.config, self._run.session_output)
        if process.returncode not in (0, 1, 5) and self._served:
            self.deaths.append(death_line(self.what, process.returncode))
        elif process.returncode == 1 and self._failures == 0:
            self.deaths.append(failed_outside_tests_line(self.what, process.returncode,
                                                         self._run.output))
        self._discard()

    def stop(self) -> None:
        """End the worker now (SIGTERM to its process group, SIGKILL after the grace) and
        remove its folder: the session is being interrupted, nothing more is read."""
        if self.process is not None:
            end_group(self.process)
        self._discard()

    def _discard(self) -> None:
        for handle in (self._requests, self._replies):
            with contextlib.suppress(OSError):
                if handle is not None:
                    handle.close()
        self._requests = self._replies = None
        if self.process is not None:
            kill_group(self.process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=CLOSE_GRACE)
        self.process = None
        if self.sink:
            shutil.rmtree(self.sink, ignore_errors=True)
            self.sink = ""

    def _collect(self) -> None:
        if self.sink:
            read_reports(self.config, self.sink, self.targets, self._run, self._offsets)
            self._run.output = read_text(Path(self.sink) / "output.txt")
            if self.process is not None and self.process.returncode is not None:
                self._run.returncode = self.process.returncode

    # -- running items -----------------------------------------------------------------------
    def run(self, item: pytest.Item, *, nextitem: pytest.Item | None = None,
            ahead: Sequence[pytest.Item] = ()) -> list[pytest.TestReport]:
        """Run ``item`` in this worker (starting one if needed) and return its reports.

        ``nextitem``: the item this worker will be sent next, when the caller is sure
        of it, so the worker keeps the fixtures both share (pytest's ``nextitem``).
        ``ahead``: every item this worker will be sent after ``item``, in order, as far
        as the caller knows them (the worker's spawn router batches their MPI jobs).
        """
        request = {"run": child_target(item),
                   "next": child_target(nextitem) if nextitem is not None else None,
                   "ahead": [child_target(other) for other in ahead]}
        for attempt in (1, 2):
            if self.process is None:
                self._start()
            reply = self._request(json.dumps(request))
            self._collect()
            own = [r for r in self._run.reports.get(0, []) if r.nodeid == item.nodeid]
            if reply is not None and "done" in reply:
                self._served += 1
                if any(r.failed for r in own):
                    self._failures += 1
                if reply.get("poisoned"):
                    self._note_poisoned(own, str(reply["poisoned"]))
                    self.close()
                return own
            if reply is not None:  # "missing": the worker did not collect it
                return [missing_report(item, self._run, self.what)]
            # The worker died: on this item, or before it started it.
            started = item.nodeid in self._run.started.get(0, [])
            assert self.process is not None
            self._run.returncode = self.process.wait()
            if started:
                self.deaths.append(death_line(self.what, self._run.returncode, item))
                text = crash_text(item, self._run, self.what)
                when = "teardown" if any(r.when == "call" for r in own) else "call"
                self._discard()
                return [*own, failed_report(item, text, when=when)]
            if attempt == 2 or not self._served:
                # It failed as a whole (start-up, collection): a rerun fails the same way.
                report = missing_report(item, self._run, self.what)
                self.deaths.append(death_line(self.what, self._run.returncode,
                                              unstarted=True))
                self._discard()
                return [report]
            self._discard()  # it died between items: the next attempt is a fresh worker
        raise AssertionError("unreachable")  # pragma: no cover

    def _note_poisoned(self, reports: list[pytest.TestReport], problem: str) -> None:
        note = (f"after this test the worker's health probe failed ({problem}); the worker "
                "was replaced, so the next test runs in a fresh process")
        for report in reports:
            if report.when == "call" or report is reports[-1]:
                report.sections.append(("gpucheck isolation", note))
                break

    def _request(self, request: str) -> dict[str, Any] | None:
        """Send one request (a JSON line); return the worker's answer, or None if it
        died first."""
        assert self._requests is not None
        assert self._replies is not None
        with contextlib.suppress(Exception):
            sys.stdout.flush()  # under -s, what this process wrote comes before the test's
        try:
            self._requests.write(request + "\n")
            self._requests.flush()
        except BrokenPipeError:
            return None
        try:
            with sigterm_raises():
                while True:
                    ready, _, _ = select.select([self._replies], [], [], POLL)
                    if ready:
                        line = self._replies.readline()
                        if not line:
                            return None
                        return dict(json.loads(line))
                    if self.process is not None and self.process.poll() is not None:
                        line = self._replies.readline()
                        return dict(json.loads(line)) if line else None
        except (KeyboardInterrupt, Stopped) as exc:
            self.stop()
            if isinstance(exc, Stopped):
                raise pytest.exit.Exception(
                    f"gpucheck: {exc}; the child processes were ended",
                    returncode=128 + signal.SIGTERM) from None
            raise


