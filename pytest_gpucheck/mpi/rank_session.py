"""Inside a launched job: binding, collective outcomes, the watchdog, rank-0-only output.

Registered by :mod:`pytest_gpucheck.mpi.plugin` only when a launcher started
this process, so ``mpi4py`` (which initialises MPI on import) is imported only
here.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import subprocess
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

import pytest

from pytest_gpucheck.environment import (
    REPORT_SINK_VARIABLE,
    SIMULATOR_CHILD_VARIABLE,
    LaunchedRank,
    claim_rank_environment,
)
from pytest_gpucheck.hookspecs import ReportSection
from pytest_gpucheck.mpi.binding import (
    RankBinding,
    agree_on_backends,
    describe_bindings,
    export_local_rank,
    node_local_rank,
    this_host,
)
from pytest_gpucheck.mpi.marker import MpiSpec, mpi_spec
from pytest_gpucheck.mpi.outcome import RankOutcome, apply_collective, exchange
from pytest_gpucheck.mpi.watchdog import RUNNING, WAITING, Watchdog
from pytest_gpucheck.processes import needs_simulator

#: Seconds the end-of-session exchange of failures may take before the watchdog ends the job.
SESSION_END_TIMEOUT = 60.0
RESULTS_BANNER = "=" * 20 + " gpucheck mpi: results before the job was stopped " + "=" * 20
#: Seconds between a rank's "called MPI_Abort" line and the abort itself.
ABORT_NOTICE_SECONDS = 0.5


@dataclass(frozen=True)
class OtherRankFailure:
    """A failure of an unmarked test on a rank other than 0 (each rank runs those alone)."""

    rank: int
    nodeid: str
    when: str
    text: str


#: The launcher refusal (a pytest-xdist worker of a launched rank that collects a test of the
#: MPI feature says it too, ``mpi/plugin.py``).
XDIST_REFUSAL = ("pytest-xdist cannot distribute tests under an MPI launcher (every rank "
                 "runs the session); add -n0")


def launcher_refusal(config: pytest.Config) -> str | None:
    """Why a session with ``config``'s options cannot run as a rank under an MPI launcher,
    or None: pytest-xdist's workers (``-n N``, an addopts' ``-n auto``) would each run
    the session, so every rank would spread its items over processes that are no ranks.
    ``scripts/run_gpu_tier.sh`` asks the same of its ``mpiexec`` step before it runs."""
    if config.getoption("numprocesses", None):
        return XDIST_REFUSAL
    return None


class RankSession:
    """Per-rank state of a launched session (this object is the plugin)."""

    def __init__(self, config: pytest.Config, launched: LaunchedRank, default_timeout: float,
                 stderr: TextIO | None = None) -> None:
        """At ``pytest_configure`` in a job the plugin spawned; after collection, given the
        real ``stderr`` taken at configure, in a rank the user launched (``.takeover``:
        that rank's output is held until then, so this does not mute it)."""
        refusal = launcher_refusal(config)
        if refusal:
            raise pytest.UsageError(refusal)
        from mpi4py import MPI

        claim_rank_environment()
        self.config = config
        self.launched = launched
        # The real COMM_WORLD: the plugin's own communicators are never guarded (the
        # watchdog aborts with 1 and must not be reported as the test's abort).
        self.world = _UNGUARDED.get("COMM_WORLD", MPI.COMM_WORLD)
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.default_timeout = default_timeout
        #: The report's MPI section (rank 0: the ranks and their devices).
        self.section: ReportSection | None = None
        self.host = this_host()
        self.local_rank, self.local_size = node_local_rank(self.world)
        export_local_rank(self.local_rank)  # before the core selects this rank's device
        # Private communicators: user messages left unmatched by a failed test can
        # never be taken for an outcome or a watchdog message.
        self.outcome_comm = self.world.Dup()
        #: Started after collection (a rank the user launched), not at configure.
        self.deferred = stderr is not None
        # The real stderr, taken at configure, while pytest's capture is suspended.
        self.stderr: TextIO = stderr or os.fdopen(os.dup(2), "w", buffering=1)
        backstop = float(config.getini("faulthandler_timeout") or 0) == 0
        #: Rank 0's outcomes so far (printed if the watchdog has to abort the job).
        self.counts: dict[str, int] = {}
        self.failures: list[tuple[str, str]] = []
        self.watchdog = Watchdog(self.world.Dup(), self.host, self.stderr,
                                 faulthandler_backstop=backstop,
                                 session_so_far=None if os.environ.get(REPORT_SINK_VARIABLE)
                                 else self.session_so_far)  # spawned: the parent has them
        self.bindings: list[RankBinding] = []
        self.backend_notes: list[str] = []
        self._running = ""
        self._real_exit = os._exit
        self._guard_exit()
        #: ``MPI.COMM_WORLD`` as tests see it (and ``mpi_comm``, its duplicate): its
        #: ``Abort`` names the rank and never ends the job with 0.
        guard_mpi_abort()  # done already, unless this plugin came after the conftests
        _ABORT_HANDLERS.append(self.aborting)
        self.guarded_world: Any = MPI.COMM_WORLD
        #: Launched by the user (not a job spawned by the plugin, whose parent reads
        #: each rank's faulthandler file): a crash reporter names this rank.
        self.crash_reporter: CrashReporter | None = (
            None if os.environ.get(REPORT_SINK_VARIABLE)
            else CrashReporter(self.rank, self.host))
        self.other_failures: list[OtherRankFailure] = []
        self._active: set[str] = set()
        self._saved_stdout: TextIO | None = None
        if self.rank != 0:
            # Only rank 0 writes the --gpu-report file (every rank would race for it).
            config.option.gpu_report = None
        if self.rank != 0 and not self.deferred:
            # Only rank 0 prints: the terminal reporter, created right after this
            # hook, writes to whatever sys.stdout is then; restored in restore_stdout.
            self._saved_stdout = sys.stdout
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives for the session

    # -- configuration -------------------------------------------------------------
    def restore_stdout(self) -> None:
        if self._saved_stdout is not None:
            sys.stdout = self._saved_stdout
            self._saved_stdout = None

    def timeout_of(self, spec: MpiSpec) -> float:
        return spec.timeout if spec.timeout is not None else self.default_timeout

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.deferred:
            self.start()

    def start(self) -> None:
        """Bind the ranks to devices and agree on the backends (collective)."""
        if self.crash_reporter is not None:
            # After pytest's faulthandler plugin (its pytest_configure runs after ours).
            self.crash_reporter.enable()
        from pytest_gpucheck.backends.devices import cuda_driver
        from pytest_gpucheck.selection import get_selection

        device = get_selection(self.config).device
        mine = RankBinding(self.rank, self.host, self.local_rank, self.local_size, device.index,
                           len(cuda_driver().devices), device.how)
        self.bindings = self.world.allgather(mine)
        self.backend_notes = agree_on_backends(self.world, get_selection(self.config))
        if self.rank == 0:
            from dataclasses import asdict

            rows = "\n".join(
                f"| {b.rank} | {b.host} | {b.local_rank}/{b.local_size} | "
                f"{b.device_index if b.device_count else 'no GPU'} | {b.how} |"
                for b in self.bindings)
            self.section = ReportSection(
                "mpi",
                {"mode": "launched", "launcher": self.launched.launcher, "ranks": self.size,
                 "bindings": [asdict(b) for b in self.bindings]},
                f"## MPI\n\n{self.size} rank(s) under a launcher ({self.launched.launcher}).\n\n"
                "| rank | host | local rank | device | how |\n| --- | --- | --- | --- | --- |\n"
                f"{rows}\n",
            )

    def skip_backends_agreed_away(self, items: list[pytest.Item]) -> None:
        """Started after collection (``.takeover``): collection parametrized the items with
        each rank's own probes, so the items of a backend that :meth:`start` made
        unavailable (it failed on another rank) are skipped here, on every rank alike."""
        if not self.backend_notes:
            return
        from pytest_gpucheck.selection import get_selection, item_backends

        probes = get_selection(self.config).probes
        for item in items:
            gone = [probes[name].reason for name in sorted(item_backends(item))
                    if name in probes and not probes[name].available]
            if gone:
                item.add_marker(pytest.mark.skip(reason=gone[0]))

    def pytest_gpucheck_report_sections(self, config: pytest.Config) -> list[ReportSection]:
        return [self.section] if self.section is not None else []

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [] if self.deferred else self.header()

    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        """Started after collection: the header's lines, under pytest's "collected" line."""
        if not self.deferred or config.get_verbosity() < 0 or config.option.no_header:
            return []
        return self.header()

    def header(self) -> list[str]:
        lines = [f"gpucheck mpi: {self.size} rank(s) under a launcher ({self.launched.launcher}); "
                 f"output from rank 0"]
        return lines + describe_bindings(self.bindings) + self.backend_notes

    # -- collection ------------------------------------------------------------------
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        in_simulator = (os.environ.get(SIMULATOR_CHILD_VARIABLE) == "1"
                        and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")
        for item in items:
            spec = mpi_spec(item)
            if spec is None:
                continue
            if self.size not in spec.ranks:
                wanted = " or ".join(map(str, spec.ranks))
                item.add_marker(pytest.mark.skip(
                    reason=f"needs {wanted} MPI ranks; this job has {self.size}"))
            elif needs_simulator(item) and not in_simulator:
                item.add_marker(pytest.mark.skip(reason=(
                    "numba-cudasim under a launcher needs its own job: run "
                    f"NUMBA_ENABLE_CUDASIM=1 {SIMULATOR_CHILD_VARIABLE}=1 mpiexec ... pytest "
                    "--gpu-backends=numba-cudasim, or run without a launcher (spawned mode)")))
            else:
                self._active.add(item.nodeid)

    # -- running -----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        spec = mpi_spec(item)
        self._running = item.nodeid
        if self.crash_reporter is not None:
            self.crash_reporter.running(item.nodeid)
        try:
            if item.nodeid not in self._active or spec is None:
                return (yield)
            self.watchdog.arm(item.nodeid, self.timeout_of(spec))
            try:
                return (yield)
            finally:
                self.watchdog.disarm()
        finally:
            self._running = ""
            if self.crash_reporter is not None:
                self.crash_reporter.running("")

    def _guard_exit(self) -> None:
        """Make ``os._exit`` during a test say so, and never exit 0.

        Under a launcher the job's exit status is the launcher's: a test that
        calls ``os._exit(0)`` would end every rank with a green status and no
        word, and ``os._exit(3)`` with no word of which rank or test.
        """
        real_exit, rank_pid = os._exit, os.getpid()

        def exit_during_test(status: int) -> NoReturn:
            code = status
            # Not in a forked helper of the rank (multiprocessing exits its children so).
            if self._running and os.getpid() == rank_pid:
                self.last_words(f"gpucheck mpi: rank {self.rank} called os._exit({code}) "
                                f"during {self._running}; the job ends here"
                                f"{'' if code else ' (with exit code 1, not 0)'}")
                code = code or 1
            real_exit(code)

        os._exit = exit_during_test

    def last_words(self, line: str) -> None:
        """Print ``line`` as this rank ends the job.

        Through the crash reporter where there is one: after ``MPI_Abort`` the
        launcher kills the ranks and may drop what they wrote last, but it
        forwards the reporter's output, which lives until the rank is gone.
        """
        with contextlib.suppress(Exception):
            if self.crash_reporter is not None:
                if self.rank == 0:  # the only rank that recorded them
                    line = f"{self.session_so_far()}\n{line}"
                self.crash_reporter.say(line)
            else:
                self.stderr.write(line + "\n")
                self.stderr.flush()

    def aborting(self, errorcode: int, real_abort: Callable[[int], object]) -> NoReturn:
        """Say which rank aborted during which test, then abort with a non-zero code."""
        code = errorcode or 1
        where = f"during {self._running}" if self._running else "outside a test"
        self.last_words(f"gpucheck mpi: rank {self.rank} called MPI_Abort({errorcode}) {where}; "
                        f"the job ends here{'' if errorcode else ' (with exit code 1, not 0)'}")
        # The launcher stops forwarding output once it handles the abort: give
        # it a moment to forward that line first.
        time.sleep(ABORT_NOTICE_SECONDS)
        real_abort(code)
        # MPICH's MPI_Abort returns while the launcher kills the job: never let the
        # test go on (and be reported passed) in the meantime.
        time.sleep(30)
        self._real_exit(code)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if item.nodeid not in self._active:
            if report.failed and self.rank != 0:
                self.other_failures.append(OtherRankFailure(
                    self.rank, item.nodeid, report.when or "", str(report.longrepr)))
            return report
        mine = RankOutcome.of(self.rank, report)
        self.watchdog.state(WAITING)
        if report.failed:
            # Peers may be blocked in MPI waiting for this rank: if they do not reach
            # the exchange soon, the watchdog stops the job with everyone's stacks.
            self.watchdog.failed(f"{report.when}: {mine.text}")
        outcomes = exchange(self.outcome_comm, mine)
        self.watchdog.exchanged()
        self.watchdog.state(RUNNING)
        return apply_collective(report, outcomes, self.size)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.rank != 0:
            return
        failure = ""
        if report.failed:
            self.counts["failed" if report.when == "call" else "error"] = self.counts.get(
                "failed" if report.when == "call" else "error", 0) + 1
            self.failures.append((f"{report.nodeid} ({report.when})", str(report.longrepr)))
            failure = _failure_block(*self.failures[-1])
        elif report.when == "call" or report.skipped:
            self.counts[report.outcome] = self.counts.get(report.outcome, 0) + 1
        else:
            return
        if self.crash_reporter is not None:
            # A segfault leaves rank 0 no chance to print them: its reporter keeps them.
            self.crash_reporter.record(failure, self._counts_line())

    def session_so_far(self) -> str:
        """What rank 0 recorded before the watchdog, an abort or an exit stopped the job
        (pytest's own summary never comes: the launcher ends every rank)."""
        return "\n".join([RESULTS_BANNER, *(_failure_block(*f) for f in self.failures),
                          self._counts_line()])

    def _counts_line(self) -> str:
        counts = ", ".join(f"{n} {what}" for what, n in sorted(self.counts.items())) or "none"
        return f"before the stop: {counts}; the stopped test failed; the job exits non-zero"

    # -- the end -------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Unmarked tests run on each rank alone; collect their failures on rank 0.
        self.watchdog.arm("the end-of-session exchange", SESSION_END_TIMEOUT)
        gathered = self.outcome_comm.gather(self.other_failures, root=0)
        self.watchdog.disarm()
        if self.rank == 0 and gathered:
            self.other_failures = [f for part in gathered for f in part]
            if self.other_failures and session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.rank != 0 or not self.other_failures:
            return
        terminalreporter.write_sep("=", "failures on other MPI ranks", red=True)
        for failure in self.other_failures:
            terminalreporter.write_sep("-", f"rank {failure.rank}: {failure.nodeid} "
                                            f"({failure.when})")
            terminalreporter.write_line(failure.text)

    def pytest_unconfigure(self) -> None:
        self.restore_stdout()
        _ABORT_HANDLERS.clear()
        unguard_mpi_abort()
        if self.crash_reporter is not None:
            self.crash_reporter.close(self.stderr)


#: Who reports an abort through a guarded communicator (the rank's session, once
#: configured), and the predefined communicators the guard replaced.
_ABORT_HANDLERS: list[Callable[[int, Callable[[int], object]], NoReturn]] = []
_UNGUARDED: dict[str, Any] = {}
#: ``strict``: the guard names aborts and never exits 0 (a session of the plugin's MPI
#: feature); otherwise the guarded communicators act as mpi4py's own.
_GUARD_STATE = {"strict": False}


def guard_mpi_abort(strict: bool = True, mpi: Any = None) -> None:
    """Make ``MPI_Abort`` through ``COMM_WORLD``, ``COMM_SELF`` (or the communicators made
    from them: ``Dup``, ``Clone``, ``Split``, ``Split_type``, ``Create``, ``Create_group``;
    ``mpi_comm`` among them) say so, and never end the job with 0.

    Under a launcher the job's exit status is the abort's error code:
    ``MPI.COMM_WORLD.Abort()`` (code 0) would end every rank with a green
    status, and MPICH's ``MPI_Abort`` even returns for a moment, so pytest could
    print PASSED for the test that aborted.  mpi4py's types are immutable, so
    the predefined communicators are replaced in the module by subclass
    instances over the same handles (``Dup`` keeps the subclass).  Called
    before the initial ``conftest.py`` files load (``mpi/plugin.py``), so that
    their module-level ``MPI.COMM_WORLD`` is the guarded one too.

    ``strict=False`` (a rank not yet known to use the MPI feature, :mod:`.takeover`):
    they act as mpi4py's own until a later ``guard_mpi_abort()`` makes the guard strict.
    """
    if mpi is None:
        from mpi4py import MPI
    else:
        MPI = mpi  # the module, as imported elsewhere

    _GUARD_STATE["strict"] = _GUARD_STATE["strict"] or strict
    if _UNGUARDED:
        return

    class GuardedIntracomm(MPI.Intracomm):  # type: ignore[misc]
        """An ``Intracomm`` whose ``Abort`` is reported and never exits 0."""

        def Abort(self, errorcode: int = 0) -> NoReturn:
            def real(code: int) -> None:
                MPI.Intracomm.Abort(self, code)

            if _ABORT_HANDLERS:
                _ABORT_HANDLERS[-1](errorcode, real)
            code = errorcode  # not strict (not yet a session of the feature): mpi4py's own
            if _GUARD_STATE["strict"]:  # before the session is configured (a conftest.py)
                sys.stderr.write(f"gpucheck mpi: rank {MPI.COMM_WORLD.Get_rank()} called "
                                 f"MPI_Abort({errorcode}) before the test session started\n")
                sys.stderr.flush()
                code = errorcode or 1
            real(code)
            time.sleep(30)  # MPICH's MPI_Abort returns while the launcher ends the job
            os._exit(code)

        def __repr__(self) -> str:  # not strict: mpi4py's own, as without the plugin
            text = object.__repr__(self)
            return text if _GUARD_STATE["strict"] else text.replace(
                f"{__name__}.GuardedIntracomm", f"{MPI.__name__}.Intracomm")

        # Dup and Clone keep the subclass by themselves; these constructors return a plain
        # Intracomm, so a communicator derived from a guarded one is wrapped (the same handle:
        # mpi4py never frees a communicator when its Python object goes away).
        def Split(self, *args: Any, **kwargs: Any) -> Any:
            return _guarded(MPI.Intracomm.Split(self, *args, **kwargs))

        def Split_type(self, *args: Any, **kwargs: Any) -> Any:
            return _guarded(MPI.Intracomm.Split_type(self, *args, **kwargs))

        def Create(self, *args: Any, **kwargs: Any) -> Any:
            return _guarded(MPI.Intracomm.Create(self, *args, **kwargs))

        def Create_group(self, *args: Any, **kwargs: Any) -> Any:
            return _guarded(MPI.Intracomm.Create_group(self, *args, **kwargs))

    def _guarded(comm: Any) -> Any:
        """``comm`` as a guarded communicator; ``COMM_NULL`` (a rank left out) stays itself,
        and so does every communicator while the guard is not strict."""
        if (comm == MPI.COMM_NULL or not isinstance(comm, MPI.Intracomm)
                or not _GUARD_STATE["strict"]):
            return comm
        return GuardedIntracomm(comm)

    # Tracebacks show ``mpi_comm``'s repr: a readable name, not "<locals>".
    GuardedIntracomm.__qualname__ = GuardedIntracomm.__name__
    for name in ("COMM_WORLD", "COMM_SELF"):
        _UNGUARDED[name] = getattr(MPI, name)
        setattr(MPI, name, GuardedIntracomm(_UNGUARDED[name]))


def guard_is_strict() -> bool:
    """Whether the guard names aborts (a session of the plugin's MPI feature)."""
    return _GUARD_STATE["strict"]


def unguard_mpi_abort() -> None:
    """Put mpi4py's own predefined communicators back."""
    _GUARD_STATE["strict"] = False
    if not _UNGUARDED:
        return
    from mpi4py import MPI

    for name, comm in _UNGUARDED.items():
        setattr(MPI, name, comm)
    _UNGUARDED.clear()


def _failure_block(title: str, text: str) -> str:
    return f"{'_' * 10} {title} {'_' * 10}\n{text.rstrip()}"


#: The crash reporter's program (run with ``python -I -S``: no imports but its own).
#: It reads one rank's faulthandler output from a pipe until the rank is gone;
#: lines starting with RS (0x1e) name the test that is running, lines starting
#: with GS (0x1d) are printed as they are (the rank's last words), lines starting
#: with US (0x1f) and FS (0x1c) are rank 0's failures and counts so far, printed
#: after a crash's dump.
_REPORTER = r"""
import sys

rank, pid, host, banner = sys.argv[1:5]
test, said, out = "", False, sys.stderr.buffer
results, counts = [], b""
for raw in sys.stdin.buffer:
    if raw.startswith(b"\x1f"):
        results.append(raw[1:])
        continue
    if raw.startswith(b"\x1c"):
        counts = raw[1:]
        continue
    if raw.startswith(b"\x1e"):
        test = raw[1:].decode("utf-8", "replace").strip()
        continue
    if raw.startswith(b"\x1d"):
        out.write(raw[1:])
        out.flush()
        continue
    if not said:
        line = raw.decode("utf-8", "replace").strip()
        cause = line.removeprefix("Fatal Python error: ") or "a fatal error"
        where = "during " + test if test else "outside a test"
        out.write(("gpucheck mpi: rank %s (pid %s, host %s) crashed %s: %s; "
                   "faulthandler's stack of rank %s (every thread):\n"
                   % (rank, pid, host, where, cause, rank)).encode())
        said = True
    out.write(b"[rank " + rank.encode() + b"] " + raw)
    out.flush()
if said and counts:
    out.write(banner.encode() + b"\n" + b"".join(results) + counts)
    out.flush()
"""


class CrashReporter:
    """Names the rank (and test) of a fatal error in launched mode.

    A segfaulting rank dies inside its signal handler and the launcher kills
    the others with SIGKILL, so no rank can print anything after a crash.
    faulthandler therefore writes this rank's dump into a pipe read by a small
    process of its own session (the launcher's kill does not reach it), which
    prints the dump under a header naming the rank, its pid (the launcher's
    "BAD TERMINATION" line names the pid), the test and the cause.  It exits
    when the pipe closes: at the end of the session, or when the rank dies.
    """

    def __init__(self, rank: int, host: str) -> None:
        read_end, self._write_end = os.pipe()
        self.process: subprocess.Popen[bytes] | None = None
        try:
            from pytest_gpucheck.processes import start_crash_reporter

            self.process = start_crash_reporter(
                [sys.executable, "-I", "-S", "-c", _REPORTER, str(rank), str(os.getpid()), host,
                 RESULTS_BANNER], read_end)
        finally:
            os.close(read_end)

    def enable(self) -> None:
        """Point faulthandler's fatal-error dump at the reporter."""
        faulthandler.enable(file=self._write_end, all_threads=True)

    def running(self, nodeid: str) -> None:
        """Tell the reporter which test runs now ("" between tests)."""
        with contextlib.suppress(OSError):
            os.write(self._write_end, b"\x1e" + nodeid.encode() + b"\n")

    def say(self, line: str) -> None:
        """Have the reporter print ``line`` (one GS-marked record per line of it)."""
        os.write(self._write_end, b"".join(b"\x1d" + part.encode() + b"\n"
                                           for part in line.splitlines()))

    def record(self, failure: str, counts: str) -> None:
        """Keep rank 0's new failure (may be "") and its counts line, for after a crash."""
        with contextlib.suppress(OSError):
            os.write(self._write_end, b"".join(b"\x1f" + part.encode() + b"\n"
                                               for part in failure.splitlines())
                     + b"\x1c" + counts.encode() + b"\n")

    def close(self, stderr: TextIO) -> None:
        """Give faulthandler back to stderr, end the reporter, wait for it."""
        faulthandler.enable(file=stderr, all_threads=True)
        with contextlib.suppress(OSError):
            os.close(self._write_end)
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # a forked child of the rank holds the pipe
                self.process.kill()
                self.process.wait()
