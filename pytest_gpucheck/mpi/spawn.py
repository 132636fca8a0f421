"""Spawned mode: run ``mpi`` tests under the launcher in child jobs and replay their outcome.

All marked tests that run with the same rank count share one job (one
``mpiexec -n N python -m pytest NODEID...``), so the frameworks are imported
once per count, not once per test.  Inside the job the tests run with the
collective outcome and the watchdog (see :mod:`.rank_session`), so rank 0's
reports already speak for every rank.  When a test hangs, the job's watchdog
prints its timeout report and aborts the job: that test gets the report as its
failure and the tests after it run in a fresh job.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_gpucheck.environment import RANK_PID_VARIABLE, SIMULATOR_CHILD_VARIABLE
from pytest_gpucheck.hookspecs import ReportSection
from pytest_gpucheck.mpi.launcher import Launcher
from pytest_gpucheck.mpi.marker import MpiSpec, mpi_spec
from pytest_gpucheck.mpi.watchdog import extract_report, reported_test, stop_reason
from pytest_gpucheck.processes import (
    ChildRun,
    Router,
    backends_option,
    crash_text,
    death_line,
    failed_report,
    hand_over_deaths,
    items_ahead,
    missing_report,
    needs_simulator,
    replay,
    router_for,
    run_child_pytest,
    write_deaths,
)
from pytest_gpucheck.reporting.terminal_width import fit, terminal_width

#: Seconds a job may take beyond its tests' timeouts (start-up, imports, JIT).
STARTUP_ALLOWANCE = 120.0
#: Key of an xdist worker's output that carries its jobs' deaths to the controller.
JOB_DEATHS_OUTPUT = "gpucheck_mpi_job_deaths"
#: Test names the "not run with N rank(s)" summary line shows before "and K more".
NOT_RUN_SHOWN = 3
#: Seconds before a running job's first "waiting for" line, and between two of them.
FIRST_PROGRESS_AFTER = 10.0
PROGRESS_EVERY = 30.0


@dataclass
class ItemRuns:
    """What the jobs reported for one item, per rank count."""

    counts: tuple[int, ...]
    reports: dict[int, list[pytest.TestReport]] = field(default_factory=dict)


class SpawnRouter(Router):
    """Parent-side plugin: run each ``mpi`` item under the launcher (registered when not a rank).

    A :class:`~pytest_gpucheck.processes.Router` of the process layer, kept in the MPI
    feature: it runs its jobs with the feature's launcher, markers and watchdog, and
    the process layer imports no feature."""

    kind = "mpi-spawn"

    def __init__(
        self,
        config: pytest.Config,
        launcher: Launcher,
        default_timeout: float,
        unusable: str | None,
    ) -> None:
        self.config = config
        self.launcher = launcher
        self.default_timeout = default_timeout
        self.unusable = unusable  # why spawning cannot work here (no launcher, no mpi4py)
        self.runs: dict[str, ItemRuns] = {}
        self.jobs: list[dict[str, object]] = []
        self._started: set[str] = set()
        self._marked = False
        #: One line per job that died (for the summary and the exit status).
        self.deaths: list[str] = []
        #: The report's MPI section (the jobs run so far).
        self.section: ReportSection | None = None
        #: rank count -> the tests that asked for it and did not get it (summary line).
        self.not_run: dict[int, list[str]] = {}

    def pytest_gpucheck_report_sections(self, config: pytest.Config) -> list[ReportSection]:
        return [self.section] if self.section is not None else []

    def timeout_of(self, spec: MpiSpec) -> float:
        return spec.timeout if spec.timeout is not None else self.default_timeout

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # The loader in plugin.py calls this for the collection that registered
        # the router; pluggy may call it again in the same hook call.
        if self._marked:
            return
        self._marked = True
        for item in items:
            spec = mpi_spec(item)
            if spec is None:
                continue
            if self.unusable:
                item.add_marker(pytest.mark.skip(reason=self.unusable))
                continue
            counts = tuple(n for n in spec.ranks if n <= self.launcher.max_ranks)
            if not counts:
                wanted = " or ".join(map(str, spec.ranks))
                item.add_marker(
                    pytest.mark.skip(
                        reason=(
                            f"needs {wanted} MPI ranks; the launcher can give "
                            f"{self.launcher.max_ranks} here (raise --gpu-mpi-max-ranks "
                            "to oversubscribe)"
                        )
                    )
                )
                continue
            self.runs[item.nodeid] = ItemRuns(counts)

    def claims(self, item: pytest.Item) -> bool:
        if item.nodeid not in self.runs or item.get_closest_marker("skip") is not None:
            return False
        # The core's simulator router runs numba-cudasim items in a child of their own,
        # where this router spawns them (with the simulator's environment inherited).
        return not needs_simulator(item) or os.environ.get(SIMULATOR_CHILD_VARIABLE) == "1"

    def run(self, item: pytest.Item, nextitem: pytest.Item | None
            ) -> list[pytest.TestReport]:
        if item.nodeid not in self._started:
            # This item and every item this process will surely run after it (the rest
            # of a plain session; an xdist worker's or a long-lived worker's queue) share
            # a job per rank count.
            batch = [item, *(other for other in items_ahead(item)
                             if router_for(other) is self and other.nodeid not in self._started)]
            self._started.update(other.nodeid for other in batch)
            self._run_all(batch)
        return self._final_reports(item)

    # -- running jobs ---------------------------------------------------------------------
    def _run_all(self, items: list[pytest.Item]) -> None:
        counts = sorted({n for item in items for n in self.runs[item.nodeid].counts})
        for count in counts:
            pending = [item for item in items if count in self.runs[item.nodeid].counts]
            while pending:
                run = self._job(pending, count)
                pending = self._collect(run, pending, count)

    def _job(self, items: list[pytest.Item], count: int) -> ChildRun:
        started = time.monotonic()
        run = self._start_job(items, count)
        self._say(f"gpucheck mpi: {self.launcher.describe(count)} finished in "
                  f"{time.monotonic() - started:.1f} s: {self._tally(run, items)}")
        self.jobs.append(
            {
                "ranks": count,
                "command": self.launcher.describe(count),
                "tests": len(items),
                "returncode": run.returncode,
                "timed_out": run.timed_out,
                "seconds": round(time.monotonic() - started, 2),
            }
        )
        self._publish()
        return run

    def _publish(self) -> None:
        rows = "\n".join(
            f"| `{j['command']}` | {j['tests']} | {j['seconds']} | {j['returncode']} |"
            for j in self.jobs
        )
        self.section = ReportSection(
            "mpi",
            {
                "mode": "spawned",
                "launcher": list(self.launcher.template),
                "max_ranks": self.launcher.max_ranks,
                "jobs": self.jobs,
            },
            "## MPI jobs\n\n| command | tests | seconds | exit code |\n| --- | --- | --- | --- |\n"
            f"{rows}\n",
            [
                f"gpucheck mpi: {j['command']}: {j['tests']} test(s) in {j['seconds']} s, "
                f"exit code {j['returncode']}"
                for j in self.jobs
            ],
        )

    def _say(self, line: str) -> None:
        """A progress line on the terminal (none on an xdist worker, which has none)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not os.environ.get("PYTEST_XDIST_WORKER"):
            # Under -q the progress letters carry no file name, so pytest's own
            # ensure_newline() does not know a line is open: close it here, with the
            # "[ nn%]" pytest would have written at its end (else that line loses it).
            if reporter._tw.width_of_current_line:
                fill = getattr(reporter, "_write_progress_information_filling_space", None)
                if (fill is not None and getattr(reporter, "_show_progress_info", False)
                        and reporter.config.get_verbosity() <= 0 and reporter._session):
                    fill()
                reporter._tw.line()
            reporter.write_line(fit(line, terminal_width(self.config)))

    @staticmethod
    def _tally(run: ChildRun, items: list[pytest.Item]) -> str:
        finished = [item for item in items if run.finished(item.nodeid)]
        failed = sum(
            1 for item in finished
            if any(r.failed for reports in run.for_nodeid(item.nodeid).values() for r in reports)
        )
        text = f"{len(finished) - failed} passed or skipped, {failed} failed"
        if len(finished) < len(items):
            text += f", {len(items) - len(finished)} without a result"
        return text

    def _progress(self, items: list[pytest.Item], count: int) -> Any:
        """A callback for :func:`run_child_pytest`: every :data:`PROGRESS_EVERY` seconds,
        say which test the job is running, on which ranks, and its time left."""
        began = time.monotonic()
        last = [began - PROGRESS_EVERY + FIRST_PROGRESS_AFTER]
        by_id = {item.nodeid: item for item in items}
        current: dict[str, float] = {}

        def show(run: ChildRun) -> None:
            now = time.monotonic()
            running = [n for n in by_id if run.started_ranks(n) and not run.finished(n)]
            for nodeid in running:
                current.setdefault(nodeid, now)
            if now - last[0] < PROGRESS_EVERY:
                return
            last[0] = now
            if not running:
                self._say(f"gpucheck mpi: waiting for {self.launcher.describe(count)} to start "
                          f"({now - began:.0f} s)")
                return
            nodeid = running[-1]
            spec = mpi_spec(by_id[nodeid]) or MpiSpec((count,), None)
            left = self.timeout_of(spec) - (now - current[nodeid])
            ranks = ", ".join(map(str, run.started_ranks(nodeid)))
            self._say(f"gpucheck mpi: waiting for {nodeid} on rank(s) {ranks} of "
                      f"{self.launcher.describe(count)}: {now - current[nodeid]:.0f} s, "
                      f"{max(left, 0):.0f} s until its timeout")

        return show

    def _start_job(self, items: list[pytest.Item], count: int) -> ChildRun:
        budget = sum(self.timeout_of(mpi_spec(item) or MpiSpec((count,), None)) for item in items)
        extra = [f"--gpu-mpi-timeout={self.default_timeout:g}",
                 *backends_option(self.config)]
        return run_child_pytest(
            self.config,
            items,
            extra_args=extra,
            # A job started from inside a rank's helper must not inherit its rank claim.
            env={RANK_PID_VARIABLE: ""},
            launcher=self.launcher.command(count),
            timeout=budget + STARTUP_ALLOWANCE,
            on_progress=self._progress(items, count),
            on_interrupt=lambda run: self._keep_finished(run, items, count),
        )

    def _keep_finished(self, run: ChildRun, items: list[pytest.Item], count: int) -> None:
        """On SIGINT/SIGTERM: report the items the interrupted job finished."""
        for item in items:
            if run.finished(item.nodeid):
                per_rank = run.for_nodeid(item.nodeid)
                self.runs[item.nodeid].reports[count] = per_rank.get(0) or next(
                    (r for r in per_rank.values() if r), [])
                if len(self.runs[item.nodeid].reports) == len(self.runs[item.nodeid].counts):
                    replay(item, self._final_reports(item))

    def _collect(self, run: ChildRun, items: list[pytest.Item], count: int) -> list[pytest.Item]:
        """Store each item's reports from ``run``; return the items still to run.

        An item the job started but did not finish is the one that stopped it:
        it fails with the watchdog's report (or the job's output).  Items the
        job never reached run again in a new job.
        """
        stopped = extract_report(run.output)
        what = f"The MPI job ({self.launcher.describe(count)})"
        remaining: list[pytest.Item] = []
        crashed: pytest.Item | None = None
        for item in items:
            per_rank = run.for_nodeid(item.nodeid)
            reports = per_rank.get(0) or next((r for r in per_rank.values() if r), [])
            ranks = run.started_ranks(item.nodeid)
            if run.finished(item.nodeid):
                self.runs[item.nodeid].reports[count] = reports
            elif stopped is not None and reported_test(stopped) == item.nodeid:
                crashed = item
                # The reason first: it is the line pytest's short summary shows.
                reason = stop_reason(stopped) or "the MPI job was stopped"
                failure = self._failed(item, f"{reason}\n{stopped}")
                self.runs[item.nodeid].reports[count] = [*reports, failure]
            elif ranks and crashed is None:  # started, never finished, no report of why
                crashed = item
                text = crash_text(item, run, what, launcher=True, ranks=ranks)
                self.runs[item.nodeid].reports[count] = [*reports, failed_report(item, text)]
            else:
                remaining.append(item)
        if run.died:
            self.deaths.append(death_line(what, run.returncode, crashed,
                                          unstarted=bool(remaining), launcher=True))
        if remaining and crashed is None:
            # Nothing started and nothing crashed: the job failed as a whole
            # (start-up, collection); running it again would fail the same way.
            for item in remaining:
                self.runs[item.nodeid].reports[count] = [missing_report(item, run, what)]
            return []
        return remaining

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        hand_over_deaths(self.config, session, self.deaths, JOB_DEATHS_OUTPUT)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        write_deaths(terminalreporter, self.deaths)
        # In the default output: `2 passed` alone would hide the counts that never ran.
        for count, nodeids in sorted(self.not_run.items()):
            # A few names, not all: the bundled suites' line listed 49 tests on one line.
            shown = [nodeid.rsplit("::", 1)[-1] for nodeid in nodeids[:NOT_RUN_SHOWN]]
            more = len(nodeids) - len(shown)
            names = ", ".join(shown) + (f" and {more} more (-rA names them)" if more else "")
            terminalreporter.write_line(fit(
                f"gpucheck mpi: not run with {count} rank(s), more than the launcher can give "
                f"here ({self.launcher.max_ranks}; raise --gpu-mpi-max-ranks to oversubscribe): "
                f"{len(nodeids)} test(s): {names}", terminal_width(self.config)), yellow=True)

    def _failed(self, item: pytest.Item, text: str) -> pytest.TestReport:
        return failed_report(item, text)

    # -- replaying --------------------------------------------------------------------------
    def _final_reports(self, item: pytest.Item) -> list[pytest.TestReport]:
        runs = self.runs[item.nodeid]
        spec = mpi_spec(item)
        not_run = [n for n in (spec.ranks if spec else ()) if n not in runs.counts]
        chosen = max(runs.reports)
        for count, reports in runs.reports.items():
            if any(r.failed for r in reports):
                chosen = count
                break
        reports = runs.reports[chosen]
        note = f"ran with {chosen} rank(s): {self.launcher.describe(chosen)}"
        others = [n for n in runs.reports if n != chosen]
        if others:
            note += f"; also ran with {', '.join(map(str, others))} rank(s)"
        for count in not_run:
            self.not_run.setdefault(count, []).append(item.nodeid)
        if not_run:
            note += (
                f"; not run with {', '.join(map(str, not_run))} rank(s): more than the "
                f"launcher can give here ({self.launcher.max_ranks})"
            )
        for report in reports:
            if report.failed:
                # After the first line, the cause, which pytest's short summary shows.
                first, _, rest = str(report.longrepr).partition("\n")
                report.longrepr = f"{first}\n[{note}]\n{rest}" if rest else f"{first}\n[{note}]"
        if reports:
            call = next((r for r in reports if r.when == "call"), reports[-1])
            call.sections.append(("gpucheck mpi", note))
        return reports
