"""Inside a launched job: binding, collective outcomes, the watchdog, rank-0-only output.

Registered by :mod:`pytest_gpucheck.mpi.plugin` only when a launcher started
this process, so ``mpi4py`` (which initialises MPI on import) is imported only
here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

import pytest

from ..child_env import REPORT_SINK_VARIABLE, SIMULATOR_CHILD_VARIABLE
from ..hookspecs import ReportSection
from ..launch_env import LaunchedRank, claim_rank_environment
from ..simulator_router import needs_simulator
from .binding import (
    RankBinding,
    agree_on_backends,
    describe_bindings,
    export_local_rank,
    node_local_rank,
    this_host,
)
from .marker import MpiSpec, mpi_spec
from .outcome import RankOutcome, apply_collective, exchange
from .watchdog import RUNNING, WAITING, Watchdog

#: Seconds the end-of-session exchange of failures may take before the watchdog ends the job.
SESSION_END_TIMEOUT = 60.0


@dataclass(frozen=True)
class OtherRankFailure:
    """A failure of an unmarked test on a rank other than 0 (each rank runs those alone)."""

    rank: int
    nodeid: str
    when: str
    text: str


class RankSession:
    """Per-rank state of a launched session (this object is the plugin)."""

    def __init__(self, config: pytest.Config, launched: LaunchedRank, default_timeout: float
                 ) -> None:
        if config.getoption("numprocesses", None):
            raise pytest.UsageError(
                "pytest-xdist cannot distribute tests under an MPI launcher (every rank runs "
                "the session); add -n0")
        from mpi4py import MPI

        claim_rank_environment()
        self.config = config
        self.launched = launched
        self.world = MPI.COMM_WORLD
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
        # The real stderr, taken now, while pytest's capture is suspended.
        self.stderr: TextIO = os.fdopen(os.dup(2), "w", buffering=1)
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
        self._guard_exit()
        self.other_failures: list[OtherRankFailure] = []
        self._active: set[str] = set()
        self._saved_stdout: TextIO | None = None
        if self.rank != 0:
            # Only rank 0 writes the --gpu-report file (every rank would race for it).
            config.option.gpu_report = None
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
        from ..devices import cuda_driver
        from ..selection import get_selection

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

    def pytest_gpucheck_report_sections(self, config: pytest.Config) -> list[ReportSection]:
        return [self.section] if self.section is not None else []

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
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
                with contextlib.suppress(Exception):
                    self.stderr.write(f"gpucheck mpi: rank {self.rank} called os._exit({code}) "
                                      f"during {self._running}; the job ends here"
                                      f"{'' if code else ' (with exit code 1, not 0)'}\n")
                    self.stderr.flush()
                code = code or 1
            real_exit(code)

        os._exit = exit_during_test

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
        if report.failed:
            self.counts["failed" if report.when == "call" else "error"] = self.counts.get(
                "failed" if report.when == "call" else "error", 0) + 1
            self.failures.append((f"{report.nodeid} ({report.when})", str(report.longrepr)))
        elif report.when == "call" or report.skipped:
            self.counts[report.outcome] = self.counts.get(report.outcome, 0) + 1

    def session_so_far(self) -> str:
        """What rank 0 recorded before the watchdog stopped the job (pytest's own summary
        never comes: MPI_Abort ends the process)."""
        lines = ["=" * 20 + " gpucheck mpi: results before the job was stopped " + "=" * 20]
        for title, text in self.failures:
            lines += [f"{'_' * 10} {title} {'_' * 10}", text.rstrip()]
        counts = ", ".join(f"{n} {what}" for what, n in sorted(self.counts.items())) or "none"
        lines.append(f"before the stop: {counts}; the stopped test failed; the job exits "
                     "non-zero (MPI_Abort)")
        return "\n".join(lines)

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
