"""pytest hooks of the benchmark feature: options, the ``gpu_benchmark``
fixture, the regression gate, baseline saving, the report section and the plot.

Registered by the core through ``FEATURE_PLUGINS``.  Nothing here imports a
framework or pytest-benchmark at load time.
"""

from __future__ import annotations

import argparse
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.bench.settings import (
    DEFAULT_ALPHA,
    DEFAULT_BASELINE_DIR,
    DEFAULT_BUDGET,
    DEFAULT_DETECT_EFFECT,
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_INCONCLUSIVE,
    DEFAULT_KEEP_FRACTION,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_ROUNDS,
    DEFAULT_PIN,
    DEFAULT_POWER,
    DEFAULT_PROCESSES,
    DEFAULT_RELATIVE_MIN_EFFECT,
    DEFAULT_REPLICATES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP_ROUNDS,
    MEASURE_KEYS,
    SETTING_NAMES,
)

if TYPE_CHECKING:
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.interleave import PeerServer
    from pytest_gpucheck.bench.run import GateRun
    from pytest_gpucheck.bench.session import BenchSession
    from pytest_gpucheck.bench.timed import Timing
    from pytest_gpucheck.hookspecs import ReportSection

# From the keys the marker accepts (it had left out max_rounds, detect_effect and power).
MARKER = (f"gpu_bench(**settings): settings of this benchmark: {', '.join(MEASURE_KEYS)} "
          f"(measurement) and {', '.join(SETTING_NAMES)} (regression gate).")

FEATURE_KEY: pytest.StashKey[BenchFeature] = pytest.StashKey()
#: A benchmark's way through the gate (bench/run.py): its settings, level, record,
#: baseline and verdict, built once when its fixture is set up.
RUN_KEY: pytest.StashKey[GateRun] = pytest.StashKey()
#: In the baseline checkout's process (--gpu-bench-peer): the server of the lead.
PEER_KEY: pytest.StashKey[PeerServer] = pytest.StashKey()
#: Options that make a run use the feature from the start (and validate it up front).
EAGER_OPTIONS = ("gpu_bench_save", "gpu_bench_compare", "gpu_bench_plot", "gpu_bench_baseline",
                 "gpu_bench_l2_flush", "gpu_bench_against", "gpu_bench_family_level",
                 "gpu_bench_budget", "gpu_bench_pin", "gpu_bench_inconclusive")


class BenchmarkRegression(Exception):
    """Raised after a benchmark's test body when the gate finds a regression."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpucheck")
    group.addoption("--gpu-bench-baseline", dest="gpu_bench_baseline", metavar="DIR",
                    default=None, help="folder of gpu_benchmark baselines (default: ini "
                    f"gpu_bench_baseline, else {DEFAULT_BASELINE_DIR} in the rootdir).")
    group.addoption("--gpu-bench-save", dest="gpu_bench_save", action="store_true",
                    help="save this run's gpu_benchmark results to the baseline folder.")
    group.addoption("--gpu-bench-compare", dest="gpu_bench_compare", action="store_true",
                    help="compare gpu_benchmark results with the stored baseline of the same "
                    "device model and backend; a regression is advisory unless "
                    "--gpu-bench-compare-fails or ini gpu_bench_stored_fails.")
    group.addoption("--gpu-bench-compare-fails", dest="gpu_bench_compare_fails",
                    action="store_true", help="--gpu-bench-compare: a regression fails its "
                    "test (by default it is advisory: the stored mode misses the gate's "
                    "targets; ini gpu_bench_stored_fails).")
    group.addoption("--gpu-bench-cross-mode", dest="gpu_bench_cross_mode", action="store_true",
                    help="--gpu-bench-compare: compare with a baseline measured in another "
                    "process mode (in-process, isolation worker, xdist worker, MPI rank, "
                    "simulator child) all the same; refused otherwise.")
    group.addoption("--gpu-bench-against", dest="gpu_bench_against", metavar="DIR",
                    default=None, help="compare every gpu_benchmark with the same test in DIR, "
                    "a checkout of the baseline code (git worktree add DIR origin/main), timed "
                    "round by round beside it in this job; fail on significant regressions. "
                    "The gate for shared CI runners.")
    group.addoption("--gpu-bench-family-level", dest="gpu_bench_family_level",
                    metavar="LEVEL", default=None,
                    help="--gpu-bench-against (and --gpu-bench-compare-fails): the chance "
                    "that identical code fails the run anywhere, over all its benchmarks "
                    "(Holm's method; default ini "
                    f"gpu_bench_family_level, {DEFAULT_FAMILY_LEVEL}).")
    group.addoption("--gpu-bench-budget", dest="gpu_bench_budget", metavar="SECONDS",
                    default=None, help="--gpu-bench-against: seconds one benchmark may take "
                    "to decide; while its interval is too wide, pairs are added until it "
                    f"decides or the budget runs out (default ini gpu_bench_budget, "
                    f"{DEFAULT_BUDGET:g}).")
    group.addoption("--gpu-bench-pin", dest="gpu_bench_pin", metavar="split|off",
                    default=None, help="--gpu-bench-against: give each side of a pair its own "
                    "CPUs and thread pools of that size (split, the default: on 2 CPUs one "
                    "each), or leave the processes as they are (off); ini gpu_bench_pin.")
    group.addoption("--gpu-bench-inconclusive", dest="gpu_bench_inconclusive",
                    metavar="pass|fail", default=None,
                    help="--gpu-bench-against / --gpu-bench-compare: whether a benchmark the "
                    "gate could not decide (INCONCLUSIVE) fails the run (default ini "
                    f"gpu_bench_inconclusive, {DEFAULT_INCONCLUSIVE}: undecided is no "
                    "evidence of a slowdown; fail for a required check).")
    # Internal: the baseline checkout's process, started by --gpu-bench-against.
    group.addoption("--gpu-bench-peer", dest="gpu_bench_peer", type=int, default=None,
                    help=argparse.SUPPRESS)
    group.addoption("--gpu-bench-plot", dest="gpu_bench_plot", metavar="PATH.html", default=None,
                    help="write a self-contained HTML plot of baseline vs this run and history.")
    group.addoption("--gpu-bench-l2-flush", dest="gpu_bench_l2_flush", action="store_true",
                    help="flush the caches before every timed round of every gpu_benchmark.")
    for name, (help_text, default) in INI_KEYS.items():
        if isinstance(default, list):
            parser.addini(name, help_text, type="linelist", default=default)
        else:
            parser.addini(name, help_text, default=default)


#: The feature's ini keys: name -> (help, default).
INI_KEYS: dict[str, tuple[str, Any]] = {
    "gpu_bench_baseline": ("folder of gpu_benchmark baselines", ""),
    "gpu_bench_alpha": ("gate: Mann-Whitney U significance level", str(DEFAULT_ALPHA)),
    "gpu_bench_min_effect": ("gate: smallest median slowdown that fails (0.07=7%)",
                             str(DEFAULT_MIN_EFFECT)),
    "gpu_bench_relative_min_effect": ("gate: smallest slowdown that fails when compared "
                                      "relative to the interleaved copy (0.05=5%)",
                                      str(DEFAULT_RELATIVE_MIN_EFFECT)),
    "gpu_bench_keep_fraction": ("gate: fraction of fastest rounds compared",
                                str(DEFAULT_KEEP_FRACTION)),
    "gpu_bench_min_rounds": ("gate: fewest rounds a comparison needs", str(DEFAULT_MIN_ROUNDS)),
    "gpu_bench_rounds": ("timed rounds per gpu_benchmark", str(DEFAULT_ROUNDS)),
    "gpu_bench_max_rounds": ("most rounds a gpu_benchmark adds when its noise needs more for "
                             "the gate's power", str(DEFAULT_MAX_ROUNDS)),
    "gpu_bench_detect_effect": ("gate: the slowdown it must catch (0.10=10%)",
                                str(DEFAULT_DETECT_EFFECT)),
    "gpu_bench_power": ("gate: probability of catching it; below it a comparison is "
                        "inconclusive", str(DEFAULT_POWER)),
    "gpu_bench_replicates": ("--gpu-bench-against: pairs of processes (one per checkout), "
                             "each timing every benchmark once; the gate's evidence",
                             str(DEFAULT_REPLICATES)),
    "gpu_bench_family_level": ("--gpu-bench-against: chance that identical code fails the "
                               "run anywhere (Holm's method over its benchmarks)",
                               str(DEFAULT_FAMILY_LEVEL)),
    "gpu_bench_processes": ("--gpu-bench-save / --gpu-bench-compare: fresh processes that "
                            "time each benchmark, one stored summary each (at least 2)",
                            str(DEFAULT_PROCESSES)),
    "gpu_bench_budget": ("--gpu-bench-against: seconds one benchmark may take to decide "
                         "(pairs are added while it cannot)", str(DEFAULT_BUDGET)),
    "gpu_bench_pin": ("--gpu-bench-against: split (each side its own CPUs and thread pools) "
                      "or off", DEFAULT_PIN),
    "gpu_bench_inconclusive": ("whether a benchmark the gate could not decide fails the run "
                               "(pass or fail)", DEFAULT_INCONCLUSIVE),
    "gpu_bench_placement_seed": ("--gpu-bench-against: seed of the measured processes' random "
                                 "placement offsets (empty: a fresh one per run)", ""),
    "gpu_bench_stored_fails": ("--gpu-bench-compare: a regression fails its test (true/false; "
                               "advisory by default)", "false"),
    "gpu_bench_warmup_rounds": ("untimed rounds after the first call",
                                str(DEFAULT_WARMUP_ROUNDS)),
    "gpu_bench_cpu_clock": ("clock of CPU-tier benchmarks: auto (CPU time for single-threaded "
                            "backends, wall time for thread pools), process or wall", "auto"),
    "gpu_bench_overrides": ("gate settings per benchmark: 'NODEID-GLOB key=value ...' per line",
                            []),
}


class BenchFeature:
    """Registered at configure; builds the feature's state on first need.

    A run that never uses ``gpu_benchmark`` (and sets no ``--gpu-bench-*``
    option or ``gpu_bench_*`` ini key) never imports NumPy through it.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._session: BenchSession | None = None

    @property
    def session(self) -> BenchSession:
        if self._session is None:
            from pytest_gpucheck.bench.session import session_from_config

            self._session = session_from_config(self.config)
        return self._session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and getattr(report, "gpucheck_bench", None):
            self.session.add_report(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist: a worker ended; keep what it said about its benchmark save."""
        if self._session is not None:
            self._session.worker_done(getattr(node, "workeroutput", None) or {})

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A stored baseline from another process mode, or a baseline folder that holds
        none of the run's benchmark files, stops the run here, before any test runs (exit
        4), in the process the user started."""
        if self.config.getoption("gpu_bench_compare", False):
            self.session.refuse_cross_mode(session)
        if self.config.getoption("gpu_bench_against", None):
            self.session.refuse_foreign_checkout(session)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._session is not None:
            self._session.finish(session)

    # Outermost: after the core's wrapper has set the report's rerun target.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.failed and "gpu_benchmark" in getattr(item, "fixturenames", ()):
            _rerun_with_backend(item, report)
        return report


def pytest_itemcollected(item: pytest.Item) -> None:
    """A benchmark is no conformance check: it has no cell in the matrix (its figures are
    in the benchmarks section; a failure is still listed with its rerun command)."""
    if "gpu_benchmark" in getattr(item, "fixturenames", ()):
        from pytest_gpucheck.reporting.report import leave_out_of_matrix

        leave_out_of_matrix(item)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    peer_fd = config.getoption("gpu_bench_peer", None)
    # The measured processes keep glibc's allocator as users run it (no fixed mmap
    # threshold: issue 43, docs/benchmarks.md "What the gate times").
    if peer_fd is not None:
        from pytest_gpucheck.bench.interleave import PeerServer

        server = PeerServer(int(peer_fd))
        config.stash[PEER_KEY] = server
        config.pluginmanager.register(server, "gpucheck-bench-peer")
    feature = BenchFeature(config)
    config.stash[FEATURE_KEY] = feature
    config.pluginmanager.register(feature, "gpucheck-bench")
    from pytest_gpucheck.bench.relay import BenchmarkRelay

    # pytest-benchmark's results of tests run in child processes come back through it.
    config.pluginmanager.register(BenchmarkRelay(config), "gpucheck-benchmark-relay")
    if any(config.getoption(name, None) for name in EAGER_OPTIONS) or any(
        config.getini(name) != default for name, (_, default) in INI_KEYS.items()
    ):
        feature.session  # noqa: B018 - validates options, ini and stored baselines now


def pytest_gpucheck_report_sections(config: pytest.Config) -> list[ReportSection]:
    """The gate's section (verdicts, saves, plot), once ``pytest_sessionfinish`` made it."""
    feature = config.stash.get(FEATURE_KEY, None)
    state = feature._session if feature is not None else None
    return [state.section] if state is not None and state.section is not None else []


def pytest_gpucheck_child_args(config: pytest.Config) -> list[str]:
    """The feature's options for a child that runs benchmarks (an isolation worker, the
    simulator child, MPI ranks): the child measures, saves and gates its own items, so
    the gate's options must reach it (without them a regression passed in every
    worker); paths are made absolute (a child runs in the rootdir)."""
    args = [flag for dest, flag in (("gpu_bench_save", "--gpu-bench-save"),
                                    ("gpu_bench_compare", "--gpu-bench-compare"),
                                    ("gpu_bench_l2_flush", "--gpu-bench-l2-flush"),
                                    ("gpu_bench_compare_fails", "--gpu-bench-compare-fails"),
                                    ("gpu_bench_cross_mode", "--gpu-bench-cross-mode"))
            if config.getoption(dest, False)]
    for dest, flag in (("gpu_bench_baseline", "--gpu-bench-baseline"),
                       ("gpu_bench_against", "--gpu-bench-against")):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={Path(value).resolve()}")
    for dest, flag in (("gpu_bench_family_level", "--gpu-bench-family-level"),
                       ("gpu_bench_budget", "--gpu-bench-budget"),
                       ("gpu_bench_pin", "--gpu-bench-pin")):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={value}")
    # pytest-benchmark's profile dumps are written where the test runs (the child).
    for prefix in config.getoption("benchmark_cprofile_dump", None) or ():
        args.append(f"--benchmark-cprofile-dump={Path(prefix).resolve()}")
    return args


def pytest_gpucheck_rerun_args(config: pytest.Config) -> list[str]:
    """The gate's options for a failed item's ``rerun:`` command: the baseline (its
    checkout, or the stored folder), the family level and the pairs, so that pasting it
    judges the benchmark against the same baseline and shows the regression again."""
    args: list[str] = []
    against = config.getoption("gpu_bench_against", None)
    if against is not None:
        args.append(f"--gpu-bench-against={Path(against).resolve()}")
        level = config.getoption("gpu_bench_family_level", None) or \
            config.getini("gpu_bench_family_level")
        args.append(f"--gpu-bench-family-level={level}")
        args += ["-o", f"gpu_bench_replicates={config.getini('gpu_bench_replicates')}"]
        for dest, flag in (("gpu_bench_budget", "--gpu-bench-budget"),
                           ("gpu_bench_pin", "--gpu-bench-pin")):
            value = config.getoption(dest, None)
            if value is not None:
                args.append(f"{flag}={value}")
    value = config.getoption("gpu_bench_inconclusive", None)
    if value is not None and (against is not None or config.getoption("gpu_bench_compare",
                                                                      False)):
        args.append(f"--gpu-bench-inconclusive={value}")
    if config.getoption("gpu_bench_compare", False):
        folder = config.getoption("gpu_bench_baseline", None) or \
            config.getini("gpu_bench_baseline") or Path(config.rootpath) / DEFAULT_BASELINE_DIR
        # Resolved as the session resolves it (bench/session.py: relative to here); as
        # many fresh processes as this run timed, so the pasted run has its evidence.
        args += ["-o", f"gpu_bench_processes={config.getini('gpu_bench_processes')}"]
        args += ["--gpu-bench-compare", f"--gpu-bench-baseline={Path(folder).resolve()}"]
        args += [flag for dest, flag in (("gpu_bench_compare_fails", "--gpu-bench-compare-fails"),
                                         ("gpu_bench_cross_mode", "--gpu-bench-cross-mode"))
                 if config.getoption(dest, False)]
        level = config.getoption("gpu_bench_family_level", None)
        if level is not None:
            args.append(f"--gpu-bench-family-level={level}")
    return args


@pytest.fixture
def gpu_benchmark(request: pytest.FixtureRequest, benchmark: Any) -> GpuBenchmark:
    """pytest-benchmark's ``benchmark``, timed on the device of the test's backend.

    The backend is the test's ``gpu_backend`` parameter when it has one, else
    NumPy.  Use it as ``gpu_benchmark(fn, *args)`` or
    ``gpu_benchmark.pedantic(fn, args=..., bytes=..., flops=...)``; with
    ``--gpu-bench-compare`` the result is checked against the baseline after
    the test body, and a significant regression fails the test.
    """
    from pytest_gpucheck.backends import get_backend
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.run import gate_run

    session = request.config.stash[FEATURE_KEY].session
    if "gpu_backend" in request.fixturenames:
        backend = request.getfixturevalue("gpu_backend")
    else:
        backend = get_backend("numpy")
    config = request.config
    disabled_by_user = bool(config.getoption("benchmark_disable", False)) and not bool(
        config.getoption("benchmark_enable", False))
    interleaved = session.against is not None and not disabled_by_user
    run = gate_run(request.node, session, lambda line: _write_now(config, line), interleaved)
    request.node.stash[RUN_KEY] = run
    return GpuBenchmark(benchmark, backend, run, _timing(session, run, disabled_by_user,
                                                         config.stash.get(PEER_KEY, None)))


def _timing(session: BenchSession, run: GateRun, disabled_by_user: bool,
            server: PeerServer | None) -> Timing | None:
    """How the benchmark's rounds are timed, chosen once: in a process the lead started
    (``--gpu-bench-peer``), the rounds the lead asks for; beside the baseline checkout
    (``--gpu-bench-against``); in fresh processes (``--gpu-bench-save`` /
    ``--gpu-bench-compare``); else in the test's own process.  None under
    ``--benchmark-disable``: the kernel runs once, untimed, as pytest-benchmark does."""
    if disabled_by_user:
        return None
    if server is not None:
        from pytest_gpucheck.bench.serve import ForTheLead

        return ForTheLead(server)
    if session.against is not None:
        from pytest_gpucheck.bench.paired import Interleaved

        return Interleaved(run)
    if session.in_processes:
        from pytest_gpucheck.bench.fresh import InFreshProcesses

        return InFreshProcesses(run)
    from pytest_gpucheck.bench.in_process import InProcess

    return InProcess()


def _write_now(config: pytest.Config, line: str) -> None:
    """Write ``line`` to the terminal while a test runs (past pytest's capture), in the
    process that has the terminal; nothing in an xdist worker or under ``-q -q``."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or config.get_verbosity() < -1 or hasattr(config, "workerinput"):
        return
    if capture is None:
        reporter.write_line(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.ensure_newline()
        # Under -q pytest's progress letters ("..F") have no file name before them,
        # which ensure_newline goes by: the line would start after an "F".
        if config.get_terminal_writer().width_of_current_line:
            reporter.write("\n")
        reporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        result = yield  # a failing test body raises here and is not gated
    finally:
        feature = item.config.stash[FEATURE_KEY]
        if feature._session is not None and feature._session.pairs:
            # The pairs a later look added end now, not with the session.
            feature._session.retire_extra_pairs()
    run = item.stash.get(RUN_KEY, None)
    record = run.record if run is not None else None
    if run is not None and record is not None and run.session.gating:
        verdict = run.judge()
        # Saved with the record, so the baseline history shows the gate's decisions.
        record.extra["gate"] = verdict.status
        if verdict.status == "regression" and not verdict.advisory:
            from pytest_gpucheck.bench.gate import format_verdict

            raise BenchmarkRegression(format_verdict(verdict))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    run = item.stash.get(RUN_KEY, None)
    record = run.record if run is not None else None
    if call.when == "call" and run is not None and record is not None:
        verdict = run.verdict
        # A plain attribute: pytest-xdist and the simulator child serialize it.
        report.gpucheck_bench = {  # type: ignore[attr-defined]
            "record": record.as_dict(),
            "verdict": verdict.as_dict() if verdict is not None else None,
        }
        if call.excinfo is not None and call.excinfo.errisinstance(BenchmarkRegression):
            report.longrepr = f"gpucheck benchmark gate: {call.excinfo.value}"
    return report


def _rerun_with_backend(item: pytest.Item, report: pytest.TestReport) -> None:
    """A failed benchmark's ``rerun:`` target names its backend (``--gpu-backends=``): a
    benchmark has no cell in the matrix, which is where the line takes the backend from
    otherwise, and without it the pasted command selects only the default backends
    (``numpy``), so a torch-cpu regression reran as "no tests ran"."""
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("gpu_backend") if callspec is not None else None
    if backend is None or getattr(report, "gpucheck_cell", None):
        return
    from pytest_gpucheck.reporting.ci import rerun_target

    target = list(getattr(report, "gpucheck_rerun", None) or rerun_target(item))
    flag = f"--gpu-backends={backend}"
    if flag not in target:
        report.gpucheck_rerun = [*target, flag]  # type: ignore[attr-defined]


