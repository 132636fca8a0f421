"""The lead's handle on a peer of the benchmark gate (``--gpu-bench-against``'s pairs,
the stored gate's fresh processes): the protocol of :mod:`.interleave` spoken from the
lead's side over a :class:`~pytest_gpucheck.processes.PeerProcess` (the process layer
starts the peer, keeps its log and its environment, and ends or kills it).  A peer
that dies, cannot start or fails its test is never a pass: the lead's test errors, or
its verdict says why the baseline is missing.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.bench.interleave import pinned_environment
from pytest_gpucheck.processes import (
    PeerProcess,
    Stopped,
    bytecode_folder,
    peer_environment,
    remove_bytecode_folder,
    run_command,
    sigterm_raises,
)

#: The module whose ``main`` a peer runs (it makes the checkout import its own code).
PEER_MODULE = "pytest_gpucheck.bench.interleave"
#: Seconds the lead waits for the peer to end after asking it to: twenty peers (ten
#: pairs) ending at once on a 2-core machine at load average 25 took more than 30 s
#: for three of them, each after its last round.
STOP_TIMEOUT = 120.0
#: The peer's option that names its end of the socket pair (the descriptor follows).
PEER_OPTION = "--gpu-bench-peer="
#: Seconds a :meth:`PeerBytecode.folder_for` collection may take (a peer's own collection is not
#: bounded either: this only keeps a stuck one from holding the run).
WARM_TIMEOUT = 120.0
#: Lines of the peer's output quoted when it fails.
LOG_TAIL = 12


class PeerError(Exception):
    """The baseline process failed; the message is one line naming what to do."""


@contextlib.contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    """While a benchmark is timed in peers, SIGTERM (a CI job cancelled or past its
    timeout, ``timeout``) ends the run as Ctrl-C does: the session ends with exit code
    143 and one line saying so, the benchmarks already judged are reported, and every
    peer is ended and the peers' compiled-module folder removed at the session's end
    (:meth:`~.session.BenchSession.end_peers`).  Without it the lead died at once,
    silently: its peers ended only by their orphan guards and its folders were left for
    the next run to sweep."""
    try:
        with sigterm_raises():
            yield
    except Stopped as exc:
        raise pytest.exit.Exception(
            f"gpucheck: {exc} while the benchmark gate was timing; its processes were "
            "ended", returncode=128 + signal.SIGTERM) from None


@dataclass
class PeerStart:
    """The peer's answer to ``run``: ready to time rounds, or why not."""

    ready: bool
    facts: dict[str, Any] = field(default_factory=dict)
    #: Why there is no baseline for this benchmark ("" when ready).
    reason: str = ""


class BaselinePeer:
    """The lead's handle on the peer process running in the baseline checkout."""

    def __init__(self, config: pytest.Config, checkout: Path, nodeids: list[str],
                 role: str = "baseline", files: list[str] | None = None,
                 cpus: tuple[int, ...] | None = None,
                 threads: int | None = None, placement_seed: int | None = None,
                 bytecode: Path | None = None) -> None:
        self.checkout = checkout
        #: "baseline" (the other checkout) or "candidate" (this one, in a process of
        #: its own so that both sides are timed alike).
        self.role = role
        self.rootdir = Path(config.rootpath)
        args = peer_command(config, checkout, nodeids, files, PEER_OPTION)
        env = pinned_environment(peer_environment(bytecode), cpus, threads, placement_seed)
        try:
            self.peer = PeerProcess(args, PEER_OPTION, checkout, env, "gpucheck-baseline-peer-")
        except OSError as exc:
            raise PeerError(f"could not start the {role} process in {checkout}: {exc}") \
                from None
        self.conn = self.peer.conn
        self.collected: set[str] = set()
        self.collection_errors = 0
        #: Minor page faults per call of each round this process timed.
        self.faults: list[float] = []
        #: What :meth:`close` said, once it has run.
        self._closed: str | None = None
        self.conn.send(("hello", str(self.rootdir)))

    def wait_collected(self) -> None:
        """Wait for the process to have collected its tests (processes started together
        collect at the same time)."""
        kind, *rest = self._receive(f"collect the {self.role} checkout's tests")
        if kind != "collected":
            raise self._failed(f"answered {kind!r} to its start")
        self.collected = set(rest[0])
        self.collection_errors = int(rest[1])

    @property
    def pid(self) -> int:
        return self.peer.pid

    @property
    def ended(self) -> bool:
        """Whether the process has ended (it is reaped here, a zombie no longer)."""
        return self.peer.poll() is not None

    def begin(self, nodeid: str, iterations: int) -> PeerStart:
        """Ask the peer to run test ``nodeid`` up to its benchmark (``iterations`` calls
        per round); it answers when its warm-up is done, or why it cannot."""
        return self.ask(nodeid, iterations) or self.answer(nodeid)

    def ask(self, nodeid: str, iterations: int) -> PeerStart | None:
        """The first half of :meth:`begin`: ask the peer to run test ``nodeid`` up to its
        benchmark and return at once, ``None`` once asked (:meth:`answer` reads its
        answer), or why it cannot (not a test it collected: nothing was sent)."""
        if nodeid not in self.collected:
            errors = (f" ({self.collection_errors} collection error(s) there: see "
                      f"{self.peer.log_name})" if self.collection_errors else "")
            return PeerStart(False, reason=f"{nodeid} is not a test in the {self.role} "
                                           f"checkout {self.checkout}{errors}")
        self.conn.send(("run", nodeid, int(iterations)))
        return None

    def answer(self, nodeid: str) -> PeerStart:
        """The second half of :meth:`begin`: the asked peer's answer, once its warm-up is
        done, or why it cannot time the test."""
        kind, *rest = self._receive(f"start {nodeid}")
        if kind == "ready":
            return PeerStart(True, facts=dict(rest[0]))
        outcome, message = rest
        return PeerStart(False, reason=f"the {self.role}'s {nodeid} {outcome} before its "
                                       f"benchmark: {message}")

    def round(self) -> float:
        """One timed round of the baseline: seconds per call (its page faults per call
        go to :attr:`faults`)."""
        self.conn.send(("round",))
        kind, *rest = self._receive("time a round")
        if kind != "sample":
            raise self._failed(f"answered {kind!r} to a round")
        self.faults.append(float(rest[1]) if len(rest) > 1 else 0.0)
        return float(rest[0])

    def end(self) -> tuple[str, str]:
        """Let the baseline's test finish; its outcome and a one-line message."""
        self.conn.send(("done",))
        kind, *rest = self._receive("finish its test")
        if kind != "finished":
            raise self._failed(f"answered {kind!r} to the end of its benchmark")
        return str(rest[0]), str(rest[1])

    def release(self) -> None:
        """Let the peer free the arrays of every replicate of the last benchmark."""
        try:
            self.conn.send(("release",))
        except OSError as exc:
            raise self._failed(f"closed its connection ({exc})") from None

    def ask_to_stop(self) -> None:
        """Tell the peer to end its session, without waiting (:meth:`close` waits)."""
        if not self.conn.closed:
            with contextlib.suppress(OSError):
                self.conn.send(("stop",))

    def close(self) -> str:
        """Stop the peer and wait for it (killed after :data:`STOP_TIMEOUT`); "" or the
        one line saying how it ended badly (the same line again on a later call)."""
        if self._closed is not None:
            return self._closed
        with contextlib.suppress(OSError):
            self.conn.send(("stop",))
        code = self.peer.end(STOP_TIMEOUT)
        if code is None:
            line = (f"gpucheck: the {self.role} process in {self.checkout} did not stop within "
                    f"{STOP_TIMEOUT:g} s and was killed; its output: {self.peer.log_name}")
        elif code not in (0, 1, 5):
            # 1: one of its tests failed (each verdict already says so); 5: none ran.
            line = (f"gpucheck: the {self.role} process in {self.checkout} exited with code "
                    f"{code}; its output: {self.peer.log_name}")
        else:
            line = ""
        self.peer.remove_log()
        self._closed = line
        return line

    # -- internals -----------------------------------------------------------------
    def _receive(self, doing: str) -> tuple[Any, ...]:
        """The peer's next message; a peer that died or closed its end raises."""
        while not self.conn.poll(1.0):
            if self.peer.poll() is not None:
                raise self._failed(f"exited with code {self.peer.returncode} while asked "
                                   f"to {doing}")
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            self.peer.wait()
            raise self._failed(f"exited with code {self.peer.returncode} while asked to "
                               f"{doing}") from None
        return tuple(message)

    def _failed(self, what: str) -> PeerError:
        last = self.peer.last_line(LOG_TAIL)
        return PeerError(f"the {self.role} process in {self.checkout} {what}: {last} (its whole "
                         f"output: {self.peer.log_name})")


def peer_command(config: pytest.Config, checkout: Path, nodeids: list[str],
                 files: list[str] | None, mode: str) -> list[str]:
    """The command of a peer in ``checkout`` for the benchmarks ``nodeids`` (or this
    checkout's test ``files`` by path); ``mode`` is :data:`PEER_OPTION` (serve the lead)
    or ``--collect-only`` (:meth:`PeerBytecode.folder_for`)."""
    files_of_ids = sorted({nodeid.split("::")[0] for nodeid in nodeids})
    # Files missing from the checkout are new benchmarks: asking for them would
    # end the peer's collection with "file not found".
    present = [f for f in files_of_ids if (checkout / f).exists()]
    if files is not None:
        # This checkout's own test files by path (the stored gate's fresh processes):
        # a file outside the rootdir has no file part in its node id.
        present = list(files)
    # Through this module's main: it makes the checkout import its own code first.
    return [sys.executable, "-m", PEER_MODULE, str(config.rootpath), "--",
            f"--rootdir={checkout}", "-p", "no:cacheprovider", mode, "-q",
            *_passed_options(config), *present]


@dataclass
class PeerBytecode:
    """Where a session's peers keep their compiled modules: a folder of its own when this
    process may not write them (:func:`~pytest_gpucheck.processes.bytecode_folder`),
    made and filled on the first peers' start, removed once they have all ended."""

    folder: Path | None = None
    asked: bool = False

    def folder_for(self, config: pytest.Config, checkouts: Sequence[Path],
                   nodeids: list[str], files: list[str] | None = None) -> Path | None:
        """The folder (None: the peers write where Python always does).  On first use,
        one collection in each checkout, as a peer collects, to its session's end, fills
        it: started together with nothing compiled, every peer compiled every module,
        at its start and at its end (hypothesis's pytest plugin imports hypothesis at
        every session's end).  A collection that fails or overruns is left to the
        peers, which report it."""
        if not self.asked:
            self.asked = True
            self.folder = bytecode_folder()
            if self.folder is None:
                return None
            env = peer_environment(self.folder)
            # The checkouts' collections side by side, as their peers then start.
            with ThreadPoolExecutor(len(checkouts)) as pool:
                list(pool.map(lambda checkout: run_command(
                    peer_command(config, checkout, nodeids, files, "--collect-only"),
                    timeout=WARM_TIMEOUT, cwd=checkout, env=env), checkouts))
        return self.folder

    def remove(self) -> None:
        """Remove the folder (its peers have ended)."""
        remove_bytecode_folder(self.folder)
        self.folder = None


@dataclass
class RetiredPeers:
    """Peers asked to end before the session's end (the pairs a later look added, each
    as soon as it has timed its benchmark: :meth:`~.run.GateRun.pair_done`; and after
    the benchmark, :meth:`~pytest_gpucheck.bench.session.BenchSession.retire_extra_pairs`).

    Each that has ended is waited for (reaped) at the next :meth:`add`, after the next
    test, without blocking on one that has not: before, they were waited for only at
    the session's end, so every peer a look had added stayed a zombie holding its
    socket and its output file for the rest of the run (a 30-benchmark run on a noisy
    machine adds dozens).  One still running is waited for before the run starts any
    new process (:meth:`wait`), or at the session's end; either kills it after
    :data:`STOP_TIMEOUT`.  How any of them ended badly
    is kept for the session's end (:attr:`errors`), where every other peer's is said.
    """

    #: Peers asked to end and not yet waited for.
    peers: list[BaselinePeer] = field(default_factory=list)
    #: One line for each retired peer that ended badly (:meth:`BaselinePeer.close`).
    errors: list[str] = field(default_factory=list)
    #: Every peer ever retired here: retired again, it is not asked twice, nor waited
    #: for twice, nor its line said twice.  Weak references, not ``id``s: a reaped
    #: peer's ``id`` went to a new peer of a later look, which was then taken as
    #: retired, never asked to end nor waited for, and ran beside the next look's
    #: (13 processes where 12 were allowed, stop 31) to the lead's end.
    asked: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)

    def holds(self, peer: BaselinePeer) -> bool:
        """Whether ``peer`` was retired (asked to end): nothing more is sent to it."""
        return peer in self.asked

    def add(self, peers: Sequence[BaselinePeer]) -> None:
        """Ask ``peers`` to end, without waiting, and wait for those retired before that
        have ended by now."""
        new = [peer for peer in peers if not self.holds(peer)]
        for peer in new:
            peer.ask_to_stop()
        self.asked.update(new)
        self.peers += new
        self._reap([peer for peer in self.peers if peer.ended])

    def wait(self) -> None:
        """Wait for every peer retired so far to end (each killed after
        :data:`STOP_TIMEOUT`): called before new processes start, so a look's new pairs
        never run beside the last look's still ending.  Left to end on their own, on a
        loaded machine (CI) they overlapped the next look's and a run held 13 processes
        where its shared pairs and one look's need 8."""
        self._reap(list(self.peers))

    def _reap(self, ended: list[BaselinePeer]) -> None:
        """Wait for each of ``ended`` and keep how it ended badly."""
        for peer in ended:
            # Off the list first: a close that is interrupted is not tried again.
            self.peers.remove(peer)
            try:
                error = peer.close()
            except Exception as exc:  # the run's verdicts outlive one peer's end
                error = (f"gpucheck: the {peer.role} process in {peer.checkout} could not "
                         f"be waited for: {exc}")
            if error:
                self.errors.append(error)


def _passed_options(config: pytest.Config) -> list[str]:
    """The lead's options the peer needs to run the same items the same way."""
    args = []
    backends = config.getoption("gpu_backends", None)
    if backends:
        args.append(f"--gpu-backends={backends}")
    if config.getoption("gpu_bench_l2_flush", False):
        args.append("--gpu-bench-l2-flush")
    # The gate's ini settings given with -o on the command line, to both sides: each
    # peer reads its own checkout's ini, so `-o gpu_bench_cpu_clock=process` reached the
    # candidate's processes only, the baseline's timed wall time, and every verdict was
    # NOT-COMPARABLE (issue 43's measurements).
    for override in getattr(config.option, "override_ini", None) or ():
        if override.startswith("gpu_bench_"):
            args += ["-o", override]
    if config.pluginmanager.hasplugin("xdist"):
        args.append("-n0")  # an addopts "-n auto" of the checkout must not spread the peer
    return args


def start_collected(starters: Sequence[Callable[[], BaselinePeer]]) -> list[BaselinePeer]:
    """Start a peer with each of ``starters``, in order, then wait for each to have
    collected its tests (started together, they collect at the same time); if one
    cannot start or collect, every one started is closed and the error raised."""
    started: list[BaselinePeer] = []
    try:
        for start in starters:
            started.append(start())
        for peer in started:
            peer.wait_collected()
    except BaseException:
        for peer in started:
            peer.close()
        raise
    return started
