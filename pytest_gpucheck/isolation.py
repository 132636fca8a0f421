"""Run test items in a child pytest process and replay their reports here.

Two features need a process of their own: the Numba CUDA simulator (chosen
when ``numba.cuda`` is first imported, so it cannot share a process with real
``numba-cuda``) and MPI tests spawned under a launcher.  The child is a plain
``python -m pytest NODEID...``; this plugin, loaded there too, streams each
test report through pytest's own serialization hooks (the ones pytest-xdist
uses) into one JSON-lines file per rank.  The parent rebuilds the reports and
logs them as if the items had run in-process, so the user sees ordinary
results, tracebacks and sections.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .child_env import REPORT_SINK_VARIABLE, SIMULATOR_CHILD_VARIABLE

SIMULATOR_BACKEND = "numba-cudasim"


_SIMULATOR_ID = re.compile(r"(?:^|[\[\-:>,/ ])numba-cudasim(?:$|[\]\-:<>,/ ])")


def needs_simulator(item: pytest.Item) -> bool:
    """True for items parametrized on the ``numba-cudasim`` backend.

    The rule is the item's parametrization id: every backend parametrization
    of the plugin uses the backend name in the id (``[numba-cudasim]``,
    ``[numba-cudasim:bundled]``, ``[numba-cudasim->numpy]``).
    """
    callspec = getattr(item, "callspec", None)
    return callspec is not None and bool(_SIMULATOR_ID.search(callspec.id))


def current_rank(env: Mapping[str, str] | None = None) -> int:
    """This process's rank under a launcher, from its environment (0 without one)."""
    from .mpi.environment import launched_rank

    launched = launched_rank(env)
    return launched.rank if launched is not None else 0


class ReportSink:
    """Child-side plugin: append every serialized report to ``<sink>/rank-<r>.jsonl``."""

    def __init__(self, config: pytest.Config, directory: Path) -> None:
        self.config = config
        self.path = directory / f"rank-{current_rank()}.jsonl"
        self._handle = self.path.open("a", encoding="utf-8")

    def _write(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        if data is None:
            return
        extra = {
            "gpucheck_cell": getattr(report, "gpucheck_cell", None),
            "gpucheck_target": getattr(report, "gpucheck_target", None),
        }
        self._handle.write(json.dumps({"report": data, "extra": extra}) + "\n")
        self._handle.flush()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # The parent names items by target, not node id: ids of files outside
        # the rootdir depend on how each process was invoked.
        report.gpucheck_target = child_target(item)  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._write(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._write(report)

    def pytest_unconfigure(self) -> None:
        self._handle.close()


def child_target(item: pytest.Item) -> str:
    """The command-line argument that selects exactly ``item`` from any directory."""
    _, _, suffix = item.nodeid.partition("::")
    return f"{item.path}::{suffix}" if suffix else str(item.path)


def install_report_sink(config: pytest.Config) -> None:
    """In a child started by :func:`run_child_pytest`, stream reports to the parent."""
    directory = os.environ.get(REPORT_SINK_VARIABLE)
    if directory:
        config.pluginmanager.register(ReportSink(config, Path(directory)), "gpucheck-report-sink")


@dataclass
class ChildRun:
    """What a child pytest produced."""

    returncode: int
    output: str
    timed_out: bool
    reports: dict[int, list[Any]] = field(default_factory=dict)  # rank -> TestReport/CollectReport

    def for_nodeid(self, nodeid: str) -> dict[int, list[pytest.TestReport]]:
        """Per rank, the test reports of ``nodeid`` (setup, call, teardown)."""
        return {
            rank: [r for r in reports if isinstance(r, pytest.TestReport) and r.nodeid == nodeid]
            for rank, reports in self.reports.items()
        }

    @property
    def collect_errors(self) -> list[Any]:
        return [
            r
            for reports in self.reports.values()
            for r in reports
            if isinstance(r, pytest.CollectReport)
        ]


def forwarded_options(config: pytest.Config) -> list[str]:
    """Options of this run that a child must share to collect and run the same items."""
    args = ["-q", "--rootdir", str(config.rootpath)]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        args.append("-n0")  # the parent already distributes; the child runs serially
    for dest, flag in (
        ("hypothesis_profile", "--hypothesis-profile"),
        ("hypothesis_seed", "--hypothesis-seed"),
        ("gpu_device", "--gpu-device"),
        ("gpu_impls", "--gpu-impls"),
    ):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={value}")
    for dest, flag in (
        # Simulator benchmarks are recorded in the same baseline folder; the
        # gate itself runs in the parent, on the parent's own results.
        ("gpu_bench_save", "--gpu-bench-save"),
        ("gpu_bench_l2_flush", "--gpu-bench-l2-flush"),
    ):
        if config.getoption(dest, False):
            args.append(flag)
    baseline = config.getoption("gpu_bench_baseline", None)
    if baseline is not None:
        args.append(f"--gpu-bench-baseline={Path(baseline).resolve()}")
    return args


def plugin_options(config: pytest.Config) -> list[str]:
    """``-p`` options of this run; they must be on the child's real command line,
    because pytest reads them before it expands an ``@argsfile``."""
    options = ["-p", "no:cacheprovider"]
    for plugin in _explicit_plugins(config.invocation_params.args):
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
) -> ChildRun:
    """Run ``items`` in ``[*launcher, python, -m, pytest, ...]`` and collect their reports.

    The child selects each item by its file path and id (:func:`child_target`),
    so items of files outside the rootdir (the bundled suites under
    ``--gpu-conformance``) are found too; its reports carry this session's
    node ids.

    ``env`` entries are added to this process's environment.  On timeout the
    whole process group (launcher and every rank) is killed, so nothing is
    left behind, and ``timed_out`` is set; the reports written until then are
    still returned.
    """
    with tempfile.TemporaryDirectory(prefix="gpucheck-child-") as sink:
        args_file = Path(sink) / "args.txt"
        targets = {child_target(item): item.nodeid for item in items}
        args_file.write_text("\n".join([*targets, *forwarded_options(config), *extra_args]))
        command = [
            *launcher,
            sys.executable,
            "-m",
            "pytest",
            *plugin_options(config),
            f"@{args_file}",
        ]
        child_env = {**os.environ, **(env or {}), REPORT_SINK_VARIABLE: sink}
        child_env.pop("PYTEST_XDIST_WORKER", None)
        child_env.pop("PYTEST_ADDOPTS", None)
        process = subprocess.Popen(
            command,
            cwd=config.rootpath,
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group, so a timeout kills every rank
        )
        timed_out = False
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            output, _ = process.communicate()
        except BaseException:
            _kill_group(process)
            process.communicate()
            raise
        reports = _read_reports(config, sink, targets)
        return ChildRun(process.returncode, output or "", timed_out, reports)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _read_reports(
    config: pytest.Config, sink: str, targets: Mapping[str, str]
) -> dict[int, list[Any]]:
    reports: dict[int, list[Any]] = {}
    for path in sorted(Path(sink).glob("rank-*.jsonl")):
        rank = int(path.stem.removeprefix("rank-"))
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a rank killed mid-write leaves a partial last line
            report = config.hook.pytest_report_from_serializable(
                config=config, data=entry["report"]
            )
            if report is None:
                continue
            if isinstance(report.longrepr, list):
                # A skip's (path, lineno, reason) tuple comes back from JSON as a list.
                report.longrepr = tuple(report.longrepr)
            extra = entry.get("extra") or {}
            if extra.get("gpucheck_cell"):
                report.gpucheck_cell = extra["gpucheck_cell"]
            nodeid = targets.get(extra.get("gpucheck_target") or "")
            if nodeid is not None:
                report.nodeid = nodeid
            reports.setdefault(rank, []).append(report)
    return reports


def replay(item: pytest.Item, reports: Sequence[pytest.TestReport]) -> None:
    """Log ``reports`` (made elsewhere) as the outcome of ``item`` in this session."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _tear_down_towards(item: pytest.Item, nextitem: pytest.Item | None) -> None:
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


def missing_report(item: pytest.Item, run: ChildRun, what: str) -> pytest.TestReport:
    """A failed report for an item the child did not report on (crash, timeout)."""
    tail = "\n".join(run.output.splitlines()[-40:])
    why = "timed out" if run.timed_out else f"exited with code {run.returncode}"
    errors = "".join(str(r.longrepr) + "\n" for r in run.collect_errors)
    return pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome="failed",
        longrepr=f"{what} {why} without reporting this test.\n{errors}{tail}",
        when="call",
        sections=[],
        duration=0.0,
        start=0.0,
        stop=0.0,
    )


class SimulatorRouter:
    """Parent-side plugin: run ``numba-cudasim`` items in one child process.

    Without pytest-xdist all simulator items of the session run in a single
    child (one Numba import and one JIT cache); under xdist each worker runs
    the simulator items it is given, one child per item.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, list[pytest.TestReport]] = {}
        self.batched: set[str] = set()
        self.last_run: ChildRun | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        if not needs_simulator(item) or item.get_closest_marker("skip") is not None:
            return None
        if item.nodeid not in self.batched:
            if os.environ.get("PYTEST_XDIST_WORKER"):
                batch = [item]
            else:
                batch = [
                    other
                    for other in item.session.items
                    if needs_simulator(other)
                    and other.nodeid not in self.batched
                    and other.get_closest_marker("skip") is None
                ]
            self._run(batch)
        reports = self.results.get(item.nodeid)
        if not reports:
            assert self.last_run is not None
            reports = [missing_report(item, self.last_run, "The numba-cudasim child process")]
        replay(item, reports)
        _tear_down_towards(item, nextitem)
        return True

    def _run(self, batch: list[pytest.Item]) -> None:
        self.batched.update(item.nodeid for item in batch)
        env = {"NUMBA_ENABLE_CUDASIM": "1", SIMULATOR_CHILD_VARIABLE: "1"}
        run = run_child_pytest(
            self.config, batch, extra_args=[f"--gpu-backends={SIMULATOR_BACKEND}"], env=env
        )
        self.last_run = run
        for reports in run.reports.values():
            for report in reports:
                if isinstance(report, pytest.TestReport):
                    self.results.setdefault(report.nodeid, []).append(report)
