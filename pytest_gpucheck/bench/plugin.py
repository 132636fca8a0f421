"""pytest hooks of the benchmark feature: options, the ``gpu_benchmark``
fixture, the regression gate, baseline saving, the report section and the plot.

Registered by the core through ``FEATURE_PLUGINS``.  Nothing here imports a
framework or pytest-benchmark at load time.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .baseline import BaselineError, BaselineStore
from .fixture import GpuBenchmark, MeasureDefaults, marker_settings
from .gate import (
    DEFAULT_ALPHA,
    DEFAULT_KEEP_FRACTION,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_ROUNDS,
    GateSettings,
    Verdict,
    compare,
    format_verdict,
    parse_override_line,
    settings_for,
)
from .records import BenchmarkRecord
from .summary import gate_markdown, gate_terminal_lines
from .timing import CPU_CLOCK_CHOICES

DEFAULT_BASELINE_DIR = ".gpucheck-baselines"
MARKER = ("gpu_bench(**settings): settings of this benchmark: rounds, warmup_rounds, "
          "iterations, l2_flush, bytes, flops (measurement) and alpha, min_effect, min_rounds, "
          "keep_fraction (regression gate).")

BENCH_KEY = pytest.StashKey["BenchSession"]()
RECORD_KEY = pytest.StashKey[BenchmarkRecord]()
VERDICT_KEY = pytest.StashKey[Verdict]()


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
                    "device model and backend; fail on significant regressions.")
    group.addoption("--gpu-bench-plot", dest="gpu_bench_plot", metavar="PATH.html", default=None,
                    help="write a self-contained HTML plot of baseline vs this run and history.")
    group.addoption("--gpu-bench-l2-flush", dest="gpu_bench_l2_flush", action="store_true",
                    help="flush the caches before every timed round of every gpu_benchmark.")
    parser.addini("gpu_bench_baseline", "folder of gpu_benchmark baselines", default="")
    parser.addini("gpu_bench_alpha", "gate: Mann-Whitney U significance level",
                  default=str(DEFAULT_ALPHA))
    parser.addini("gpu_bench_min_effect", "gate: smallest median slowdown that fails (0.07=7%)",
                  default=str(DEFAULT_MIN_EFFECT))
    parser.addini("gpu_bench_keep_fraction", "gate: fraction of fastest rounds compared",
                  default=str(DEFAULT_KEEP_FRACTION))
    parser.addini("gpu_bench_min_rounds", "gate: fewest rounds a comparison needs",
                  default=str(DEFAULT_MIN_ROUNDS))
    parser.addini("gpu_bench_rounds", "timed rounds per gpu_benchmark", default="30")
    parser.addini("gpu_bench_warmup_rounds", "untimed rounds after the first call", default="2")
    parser.addini("gpu_bench_cpu_clock", "clock of CPU-tier benchmarks: auto (CPU time for "
                  "single-threaded backends, wall time for thread pools), process or wall",
                  default="auto")
    parser.addini("gpu_bench_overrides", "gate settings per benchmark: "
                  "'NODEID-GLOB key=value ...' per line", type="linelist", default=[])


@dataclass(eq=False)  # registered as a plugin: must stay hashable
class BenchSession:
    """The benchmark feature's state for one pytest process."""

    store: BaselineStore
    save: bool
    compare: bool
    plot: Path | None
    gate: GateSettings
    overrides: list[str]
    measure: MeasureDefaults
    run_id: str
    process: str
    is_worker: bool
    local_records: list[BenchmarkRecord] = field(default_factory=list)
    #: (record, verdict) from every report of the run, workers' included.
    results: list[tuple[BenchmarkRecord, Verdict | None]] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)
    save_error: str = ""

    def judge(self, item: pytest.Item, record: BenchmarkRecord) -> Verdict:
        _, marker_gate = marker_settings(item)
        try:
            settings = settings_for(record.name, self.gate, self.overrides, marker_gate)
        except ValueError as exc:
            pytest.fail(f"gpu_bench gate settings of {record.name}: {exc}", pytrace=False)
        env = record.environment
        baseline = self.store.baseline(record.name, env.device_model, record.backend)
        verdict = compare(baseline, record, settings)
        if verdict.status == "no-baseline":
            others = [d for d in self.store.devices_with(record.name, record.backend)
                      if d != env.device_slug]
            if others:
                verdict = Verdict(**{**verdict.__dict__, "reason": (
                    f"no baseline on {env.device_model}; baselines of it exist only for "
                    f"{', '.join(others)} (never compared across device models)")})
        return verdict

    # -- hooks (the session object is registered as a plugin) ---------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "gpucheck_bench", None)
        if not data or report.when != "call":
            return
        record = BenchmarkRecord.from_dict(data["record"])
        verdict = _verdict_from_dict(data["verdict"]) if data.get("verdict") else None
        self.results.append((record, verdict))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.save and self.local_records:
            try:
                self.saved = self.store.save(self.local_records, self.run_id, self.process)
            except OSError as exc:
                self.save_error = (f"gpucheck: could not save benchmark results to "
                                   f"{self.store.root}: {exc}")
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.is_worker and (self.results or self.save_error):
            _publish(session.config, self)


def _float_ini(config: pytest.Config, name: str) -> float:
    value = config.getini(name)
    try:
        return float(value)
    except ValueError:
        raise pytest.UsageError(f"ini {name} = {value!r} is not a number; "
                                f"set it to a number such as {DEFAULT_ALPHA}") from None


def _session_from_config(config: pytest.Config) -> BenchSession:
    folder = (config.getoption("gpu_bench_baseline") or config.getini("gpu_bench_baseline")
              or str(config.rootpath / DEFAULT_BASELINE_DIR))
    plot = config.getoption("gpu_bench_plot")
    if plot and not str(plot).endswith(".html"):
        raise pytest.UsageError(f"--gpu-bench-plot={plot}: the plot is HTML; "
                                "give a path ending in .html")
    try:
        gate = GateSettings(
            alpha=_float_ini(config, "gpu_bench_alpha"),
            min_effect=_float_ini(config, "gpu_bench_min_effect"),
            min_rounds=int(_float_ini(config, "gpu_bench_min_rounds")),
            keep_fraction=_float_ini(config, "gpu_bench_keep_fraction"),
        )
        gate.validate()
        overrides = [line for line in config.getini("gpu_bench_overrides") if line.strip()]
        for line in overrides:
            gate.with_overrides(parse_override_line(line)[1])
    except ValueError as exc:
        raise pytest.UsageError(f"gpucheck benchmark gate settings: {exc}") from None
    measure = MeasureDefaults(
        rounds=int(_float_ini(config, "gpu_bench_rounds")),
        warmup_rounds=int(_float_ini(config, "gpu_bench_warmup_rounds")),
        l2_flush=bool(config.getoption("gpu_bench_l2_flush")),
        cpu_clock=str(config.getini("gpu_bench_cpu_clock")).strip(),
    )
    if measure.cpu_clock not in CPU_CLOCK_CHOICES:
        raise pytest.UsageError(f"ini gpu_bench_cpu_clock = {measure.cpu_clock!r}; "
                                f"use {', '.join(CPU_CLOCK_CHOICES)}")
    if measure.rounds < 1 or measure.warmup_rounds < 0:
        raise pytest.UsageError("ini gpu_bench_rounds must be >= 1 and gpu_bench_warmup_rounds "
                                ">= 0")
    workerinput = getattr(config, "workerinput", None)
    session = BenchSession(
        store=BaselineStore(Path(folder)),
        save=bool(config.getoption("gpu_bench_save")),
        compare=bool(config.getoption("gpu_bench_compare")),
        plot=Path(plot) if plot else None,
        gate=gate,
        overrides=overrides,
        measure=measure,
        run_id=str(workerinput["testrunuid"]) if workerinput else uuid.uuid4().hex,
        process=str(workerinput["workerid"]) if workerinput else "main",
        is_worker=workerinput is not None,
    )
    try:
        if session.compare:
            session.store.require_root("--gpu-bench-compare")
        if session.compare or session.save or session.plot:
            session.store.load_all()
    except BaselineError as exc:
        raise pytest.UsageError(str(exc)) from None
    return session


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    session = _session_from_config(config)
    config.stash[BENCH_KEY] = session
    config.pluginmanager.register(session, "gpucheck-bench-session")


@pytest.fixture
def gpu_benchmark(request: pytest.FixtureRequest, benchmark: Any) -> GpuBenchmark:
    """pytest-benchmark's ``benchmark``, timed on the device of the test's backend.

    The backend is the test's ``gpu_backend`` parameter when it has one, else
    NumPy.  Use it as ``gpu_benchmark(fn, *args)`` or
    ``gpu_benchmark.pedantic(fn, args=..., bytes=..., flops=...)``; with
    ``--gpu-bench-compare`` the result is checked against the baseline after
    the test body, and a significant regression fails the test.
    """
    from ..backends import get_backend

    session = request.config.stash[BENCH_KEY]
    if "gpu_backend" in request.fixturenames:
        backend = request.getfixturevalue("gpu_backend")
    else:
        backend = get_backend("numpy")
    measure, _ = marker_settings(request.node)
    item = request.node

    def keep(record: BenchmarkRecord) -> None:
        item.stash[RECORD_KEY] = record
        session.local_records.append(record)

    config = request.config
    disabled_by_user = bool(config.getoption("benchmark_disable", False)) and not bool(
        config.getoption("benchmark_enable", False))
    return GpuBenchmark(benchmark, backend, item.nodeid, session.measure, measure,
                        session.store if session.compare else None, keep, disabled_by_user)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    result = yield  # a failing test body raises here and is not gated
    session = item.config.stash[BENCH_KEY]
    record = item.stash.get(RECORD_KEY, None)
    if record is not None and session.compare:
        verdict = session.judge(item, record)
        item.stash[VERDICT_KEY] = verdict
        if verdict.status == "regression":
            raise BenchmarkRegression(format_verdict(verdict))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    record = item.stash.get(RECORD_KEY, None)
    if call.when == "call" and record is not None:
        verdict = item.stash.get(VERDICT_KEY, None)
        # A plain attribute: pytest-xdist and the simulator child serialize it.
        report.gpucheck_bench = {  # type: ignore[attr-defined]
            "record": record.as_dict(),
            "verdict": verdict.as_dict() if verdict is not None else None,
        }
        if call.excinfo is not None and call.excinfo.errisinstance(BenchmarkRegression):
            report.longrepr = f"gpucheck benchmark gate: {call.excinfo.value}"
    return report


def _verdict_from_dict(data: dict[str, Any]) -> Verdict:
    settings = GateSettings(alpha=float(data["alpha"]), min_effect=float(data["min_effect"]),
                            keep_fraction=float(data.get("keep_fraction", 1.0)))
    return Verdict(name=data["name"], backend=data["backend"], device=data["device"],
                   status=data["status"], baseline_median=data["baseline_median"],
                   new_median=data["new_median"], pvalue=data["pvalue"], settings=settings,
                   reason=data.get("reason", ""))


def _publish(config: pytest.Config, state: BenchSession) -> None:
    from ..report import add_section

    lines = gate_terminal_lines(state.results, compared=state.compare)
    if state.save_error:
        lines.append(state.save_error)
    if state.saved:
        lines.append(f"gpucheck: saved {len(state.local_records)} benchmark result(s) to "
                     f"{state.store.root}")
    elif state.save and not state.is_worker:
        lines.append(f"gpucheck: benchmark results saved by the workers to {state.store.root}")
    if state.plot is not None:
        from .plot import write_plot

        write_plot(state.plot, state.results, state.store)
        lines.append(f"gpucheck: benchmark plot written to {state.plot}")
    data = {
        "compared": state.compare,
        "baseline_dir": str(state.store.root),
        "results": [{"record": record.as_dict(),
                     "verdict": verdict.as_dict() if verdict else None}
                    for record, verdict in state.results],
    }
    add_section(config, "benchmarks", data, gate_markdown(state.results, compared=state.compare),
                lines)
