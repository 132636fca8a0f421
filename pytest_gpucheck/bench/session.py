"""The benchmark feature's per-process state: settings, baselines, results.

Imported when pytest configures, not when it loads the plugin, so a plain
``pytest`` run without benchmarks never imports NumPy through this feature.
"""

from __future__ import annotations

import functools
import os
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.bench.baseline import BaselineError, BaselineStore
from pytest_gpucheck.bench.fixture import MeasureDefaults
from pytest_gpucheck.bench.gate import (
    INTERLEAVED,
    GateSettings,
    Verdict,
    compare,
    compare_interleaved,
    cross_mode_refusal,
    judge_family,
    judge_stored_family,
    stored_first_step,
)
from pytest_gpucheck.bench.gate.settings import (
    float_ini,
    gate_from_config,
    read_against_folder,
    read_budget,
    read_family_level,
    read_inconclusive,
    read_pin,
    read_placement_seed,
    stored_fails,
)
from pytest_gpucheck.bench.peers import (
    BaselinePeer,
    PeerBytecode,
    RetiredPeers,
    start_collected,
)
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.session_ceiling import apply_session_ceilings
from pytest_gpucheck.bench.settings import (
    DEFAULT_BASELINE_DIR,
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_PIN,
    DEFAULT_PROCESSES,
    DEFAULT_REPLICATES,
)
from pytest_gpucheck.bench.stored import (
    MEETS_TARGETS,
    compare_processes,
    judge_stored_processes,
    summaries_of,
)
from pytest_gpucheck.bench.summary import publish, some_of
from pytest_gpucheck.bench.timing import CPU_CLOCK_CHOICES
from pytest_gpucheck.hookspecs import ReportSection


@dataclass
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
    #: From each pytest-xdist worker (main process only): its save outcome.
    worker_saves: list[dict[str, Any]] = field(default_factory=list)
    #: The gate's section of the report (main process, once the run is finished).
    section: ReportSection | None = None
    #: ``--gpu-bench-against``: the baseline checkout, and its process once started.
    against: Path | None = None
    #: Its processes, once started: (baseline, candidate) per replicate.
    pairs: list[tuple[BaselinePeer, BaselinePeer]] = field(default_factory=list)
    #: ``--gpu-bench-save`` / ``--gpu-bench-compare``: the fresh processes that time each
    #: benchmark (``gpu_bench_processes`` of them), once started.
    fresh: list[BaselinePeer] = field(default_factory=list)
    #: How the baseline process ended, when badly (fails the run).
    peer_error: str = ""
    #: ``--gpu-bench-against``: the chance that identical code fails the run anywhere.
    family_level: float = DEFAULT_FAMILY_LEVEL
    #: Benchmarks this process collected (the family's size as the tests run).
    planned_family: int | None = None
    #: Which kind of process measures here (``in-process``, ``isolation worker``,
    #: ``xdist worker``, ``MPI rank``, ``simulator child``), saved with each record.
    process_mode: str = "in-process"
    #: Benchmarks that started their interleaved timing (for the progress lines).
    benchmarks_started: int = 0
    #: Regressions found only when the run's family was judged (their tests passed).
    family_regressions: list[Verdict] = field(default_factory=list)
    #: ``--gpu-bench-cross-mode``: compare a stored baseline measured in another process
    #: mode all the same (refused otherwise).
    cross_mode: bool = False
    #: ``--gpu-bench-against``: how the measured processes' CPUs and threads are held
    #: (:data:`~.settings.PIN_CHOICES`).
    pin: str = DEFAULT_PIN
    #: ``--gpu-bench-compare-fails``: a stored regression fails its test; otherwise it is
    #: advisory (the stored mode misses its targets, :data:`~.gate.STORED_MEASURED`).
    stored_fails: bool = False
    #: ``--gpu-bench-against``: this run's benchmarks that are not tests in the baseline
    #: checkout (new ones), named once in the summary.
    missing_in_baseline: list[str] = field(default_factory=list)
    #: Peers of the pairs asked to end after the benchmark that added them
    #: (:meth:`retire_extra_pairs`), waited for a benchmark later.
    retired: RetiredPeers = field(default_factory=RetiredPeers)
    #: Where the peers keep their compiled modules (removed at the session's end).
    bytecode: PeerBytecode = field(default_factory=PeerBytecode)
    #: ``--gpu-bench-inconclusive=fail``: a benchmark the gate could not decide fails the
    #: run (:data:`~.settings.DEFAULT_INCONCLUSIVE`).
    inconclusive_fails: bool = False
    #: The verdicts left undecided once the run's family was judged (they fail the run
    #: under :attr:`inconclusive_fails`).
    undecided: list[Verdict] = field(default_factory=list)

    @property
    def gating(self) -> bool:
        """Whether benchmarks are judged: against stored baselines or a checkout."""
        return self.compare or self.against is not None

    def peers(self, session: pytest.Session,
              count: int | None = None) -> list[tuple[BaselinePeer, BaselinePeer]]:
        """Pairs of processes, one in the baseline checkout and one in this checkout, at
        least ``count`` of them (default: one per replicate), started together on the
        first benchmark; a benchmark that needs more pairs to decide
        (:mod:`.sequential`) starts the missing ones, and later benchmarks use them too.

        A pair of its own for each run of a test: where a process's memory lies moved an
        identical kernel by up to 9% for every test that process ran, so the runs of one
        test must not share their processes.
        """
        assert self.against is not None
        wanted = self.measure.replicates if count is None else count
        if len(self.pairs) < wanted:
            self.retired.wait()  # the memory of the last look's pairs first
            nodeids = [item.nodeid for item in session.items
                       if "gpu_benchmark" in getattr(item, "fixturenames", ())]
            from pytest_gpucheck.bench.interleave import SIDES, start_order

            against, here = self.against, Path(session.config.rootpath)
            checkouts = {"baseline": against, "candidate": here}
            bytecode = self.bytecode.folder_for(session.config, [here, against], nodeids)
            # Each pair's two processes started in its start order (the side that
            # starts the pair first): the baseline's always went first (issue 43).
            started = start_collected([
                functools.partial(BaselinePeer, session.config, checkouts[role], nodeids,
                                  role=role, bytecode=bytecode,
                                  **self.peer_placement(index, role))
                for index in range(len(self.pairs), wanted) for role in start_order(index)])
            first = not self.pairs
            self.pairs += [
                (pair[0], pair[1]) if pair[0].role == SIDES[0] else (pair[1], pair[0])
                for pair in zip(started[::2], started[1::2], strict=True)]
            if first:
                self.check_baseline_tests(session, self.pairs[0][0].collected)
        return self.pairs

    def retire_extra_pairs(self) -> None:
        """After a benchmark: the pairs its later looks added beyond the first look's
        (``gpu_bench_replicates``) are asked to end now; the next benchmark's first look
        needs only those, and a look that needs more starts them again (its start-up
        counted in the budget, bench/paired.py).  Kept alive for the whole run, about 50
        torch-cpu processes of ~330 MB each left 144 MB free and took 16 minutes to end
        (issue 43).  Those that have ended are waited for after the next test
        (:class:`RetiredPeers`: called after every test once pairs exist), the rest at
        the session's end."""
        keep = self.measure.replicates
        self.retired.add([peer for pair in self.pairs[keep:] for peer in pair])
        self.pairs = self.pairs[:keep]

    @property
    def in_processes(self) -> bool:
        """Whether benchmarks are timed in fresh processes: saving or comparing a stored
        baseline (:mod:`.stored`), not in the interleaved gate or one of its peers."""
        return (self.save or self.compare) and self.against is None

    def fresh_processes(self, session: pytest.Session) -> list[BaselinePeer]:
        """``gpu_bench_processes`` fresh pytest processes in this checkout, started
        together on the first benchmark, each serving every benchmark in turn (the
        interleaved gate's peers, with its allocator regime)."""
        if not self.fresh:
            items = [item for item in session.items
                     if "gpu_benchmark" in getattr(item, "fixturenames", ())]
            nodeids = [item.nodeid for item in items]
            files = sorted({str(item.path) for item in items})
            # The interleaved gate's thread limits (a half of the CPUs' worth of
            # framework threads; none under --gpu-bench-pin=off): default thread pools
            # made NumPy's matmul 668 us with a 250% spread between processes and
            # identical code an advisory REGRESSION a minute after saving (issue 43).
            from pytest_gpucheck.bench.interleave import pinning_plan

            plan = pinning_plan(self.pin)
            threads = plan.threads if plan is not None else None
            here = Path(session.config.rootpath)
            bytecode = self.bytecode.folder_for(session.config, [here], nodeids, files)
            self.fresh = start_collected([functools.partial(
                BaselinePeer, session.config, here, nodeids, role="fresh", files=files,
                threads=threads, bytecode=bytecode)] * self.measure.processes)
        return self.fresh

    def peer_placement(self, index: int, role: str) -> dict[str, Any]:
        """What the ``index``-th pair's process of ``role`` is started with: its own CPUs
        and thread pools (:func:`~.interleave.pinning_plan`; each side on each half in
        half of the pairs, :func:`~.interleave.cpu_half`) and its placement
        seed."""
        from pytest_gpucheck.bench.interleave import cpu_half, pinning_plan

        plan = pinning_plan(self.pin)
        side = plan.sides[cpu_half(index, role)] if plan is not None else None
        seed = None if self.measure.placement_seed is None else \
            hash_seed(self.measure.placement_seed, index, role)
        return {"cpus": side, "threads": plan.threads if plan is not None else None,
                "placement_seed": seed}

    def judge(self, item: pytest.Item, record: BenchmarkRecord,
              against: BenchmarkRecord | str | None, *, settings: GateSettings, level: float,
              family: int) -> Verdict:
        """The verdict of ``record`` as its test ends, with the benchmark's ``settings``
        at its two-sided ``level`` over the ``family`` of benchmarks collected (its
        :class:`~.run.GateRun`'s: Bonferroni now, Holm over the run at its end)."""
        env = record.environment
        if self.against is not None:
            if isinstance(against, BenchmarkRecord):
                # At the family's level over every benchmark collected: a regression
                # found now is one Holm's method over the run confirms at its end.
                return compare_interleaved(against, record, settings, level=level,
                                           family=family)
            return Verdict(record.name, record.backend, env.device_model, "no-baseline",
                           new_median=record.median, settings=settings,
                           relative_to=INTERLEAVED, reason=against or (
                               f"the baseline checkout {self.against} did not time it"))
        baseline = self.store.baseline(record.name, env.device_model, record.backend)
        if baseline is not None and summaries_of(baseline) and summaries_of(record):
            # Process against process (Holm's first step; the step-down at the run's end).
            verdict = compare_processes(baseline, record, settings, level, family,
                                        cross_mode=self.cross_mode)
            return replace(verdict, advisory=verdict.status == "regression"
                           and not self.stored_fails)
        verdict = compare(baseline, record, settings, cross_mode=self.cross_mode)
        if self.stored_fails:
            # Failing, the stored comparisons are one family too (Holm's first step now,
            # the step-down at the run's end: judge_the_family).
            verdict = stored_first_step(verdict, level, family)
        elif verdict.status == "regression":
            verdict = replace(verdict, advisory=True)
        if verdict.status == "no-baseline":
            others = [d for d in self.store.devices_with(record.name, record.backend)
                      if d != env.device_slug]
            if others:
                verdict = Verdict(**{**verdict.__dict__, "reason": (
                    f"no baseline on {env.device_model}; baselines of it exist only for "
                    f"{', '.join(others)} (never compared across device models)")})
        return verdict

    def refuse_cross_mode(self, session: pytest.Session) -> None:
        """Exit 4 once the items are collected, before any benchmark runs, when a stored
        baseline one of them compares with was measured in another process mode than
        that item will be (:func:`predicted_mode`), unless ``--gpu-bench-cross-mode``.
        Only in the process the user started (an xdist controller collects nothing: its
        workers' comparisons refuse instead, :func:`~.gate.compare`)."""
        config = session.config
        if not self.compare or self.cross_mode or self.is_worker \
                or self.process_mode != "in-process" \
                or config.getoption("gpu_bench_peer", None) is not None:
            return
        from pytest_gpucheck.selection import item_backends

        # A skipped item measures nothing (the routers leave it here too).
        items = [item for item in session.items
                 if "gpu_benchmark" in getattr(item, "fixturenames", ())
                 and item.get_closest_marker("skip") is None]
        devices = local_device_models(
            sorted({name for item in items for name in item_backends(item)}))
        for item in items:
            mode = predicted_mode(item)
            # A benchmark without a backend parameter times NumPy (the fixture's default).
            for backend in sorted(item_backends(item)) or ["numpy"]:
                for device in devices:
                    stored = self.store.baseline(item.nodeid, device, backend)
                    old = stored.extra.get("process_mode") if stored is not None else None
                    if old and old != mode:
                        raise pytest.UsageError(
                            f"--gpu-bench-compare {item.nodeid} [{backend} on {device}]: "
                            f"{cross_mode_refusal(str(old), mode)}")

    def refuse_foreign_checkout(self, session: pytest.Session) -> None:
        """Exit 4 once the items are collected, before any process starts, when
        ``--gpu-bench-against`` names a folder that holds none of this run's benchmark
        files: it is not a checkout of this project (a CI path mistake), and a gate that
        compares with nothing must not pass.  Files missing from a checkout that has
        others are new benchmarks (their verdicts say NO-BASELINE, the summary names
        them)."""
        config = session.config
        if self.against is None or self.is_worker \
                or config.getoption("gpu_bench_peer", None) is not None:
            return
        files = benchmark_files(session)
        if files and not any((self.against / name).exists() for name in files):
            raise pytest.UsageError(foreign_checkout_line(
                str(config.getoption("gpu_bench_against")), self.against,
                f"none of this run's {len(files)} benchmark file(s) is there (looked for "
                f"{some_of(files)})"))

    def check_baseline_tests(self, session: pytest.Session, collected: set[str]) -> None:
        """Once the first baseline process collected its tests (before any timing): none of
        this run's benchmarks among them is a usage error (exit 4, :func:`pytest.exit`:
        the run is inside a test by now); some missing are named once in the summary
        (:attr:`missing_in_baseline`)."""
        wanted = benchmark_ids(session)
        missing = [nodeid for nodeid in wanted if nodeid not in collected]
        self.missing_in_baseline = missing
        if wanted and len(missing) == len(wanted):
            assert self.against is not None
            pytest.exit(foreign_checkout_line(
                str(session.config.getoption("gpu_bench_against")), self.against,
                f"none of this run's {len(wanted)} benchmark(s) is a test there (looked for "
                f"{some_of(wanted)})"), returncode=pytest.ExitCode.USAGE_ERROR)

    def started_benchmark(self) -> int:
        """Count a benchmark that starts its interleaved timing; its number in the run."""
        self.benchmarks_started += 1
        return self.benchmarks_started

    def family_size(self, session: pytest.Session) -> int:
        """The benchmarks this process collected: an upper bound of those it compares."""
        if self.planned_family is None:
            self.planned_family = max(1, sum(
                "gpu_benchmark" in getattr(item, "fixturenames", ()) for item in session.items))
        return self.planned_family

    def judge_the_family(self) -> None:
        """Judge every interleaved comparison of the run as one family (Holm's method at
        :attr:`family_level`); a regression only the step-down finds fails the run (its
        test passed at the first step) and is named in the summary."""
        if self.against is None and not self.compare:
            return
        verdicts = [verdict for _, verdict in self.results if verdict is not None]
        if self.against is not None:
            verdicts = judge_family(verdicts, self.family_level)
        else:
            verdicts = judge_stored_processes(verdicts, self.family_level, self.stored_fails)
            if self.stored_fails:
                verdicts = judge_stored_family(verdicts, self.family_level)
        judged = iter(verdicts)
        results: list[tuple[BenchmarkRecord, Verdict | None]] = []
        for record, verdict in self.results:
            if verdict is None:
                results.append((record, verdict))
                continue
            final = next(judged)
            if final.status == "regression" and verdict.status != "regression" \
                    and not final.advisory:
                self.family_regressions.append(final)
            results.append((record, final))
        self.results = results
        self.undecided = [verdict for _, verdict in results
                          if verdict is not None and verdict.status == "inconclusive"]

    # -- called by the plugin's hooks -----------------------------------------------
    def add_report(self, report: pytest.TestReport) -> None:
        """Keep the record and verdict a call report carries (local or from a worker)."""
        data = getattr(report, "gpucheck_bench", None)
        if not data or report.when != "call":
            return
        record = BenchmarkRecord.from_dict(data["record"])
        verdict = Verdict.from_dict(data["verdict"]) if data.get("verdict") else None
        self.results.append((record, verdict))

    def worker_done(self, workeroutput: dict[str, Any]) -> None:
        """Keep what an xdist worker said about its save (main process)."""
        saved = workeroutput.get("gpucheck_bench_save")
        if saved is not None:
            self.worker_saves.append(saved)

    def end_peers(self) -> str:
        """End every peer of the session (pairs, retired ones, fresh processes) and remove
        their compiled-module folder; "" or how the peers that ended badly ended, one
        ``;``-separated line (the retired ones' included)."""
        # Every peer is asked first, then each is waited for: they end at once, not one
        # after the other (twenty processes at the default pairs, on a loaded machine).
        peers = [peer for pair in self.pairs for peer in pair] + self.retired.peers + self.fresh
        for peer in peers:
            peer.ask_to_stop()
        errors = [*self.retired.errors, *(peer.close() for peer in peers)]
        self.pairs, self.retired, self.fresh = [], RetiredPeers(), []
        self.bytecode.remove()
        return "; ".join(error for error in errors if error)

    def finish(self, session: pytest.Session) -> None:
        """Save this process's records; in the main process, publish the summary.

        A save that fails, here or in any worker, fails the run with one line
        naming the folder and the OS error; nothing is called saved unless it
        is on disk.
        """
        self.peer_error = self.end_peers()
        if self.peer_error:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # Before saving and publishing: the fractions use the best copy of the session
        # (here, the records of every process whose reports came back), not the one
        # copy timed beside each benchmark.  A copy seen twice (a local record and its
        # report) is counted once.
        apply_session_ceilings([*self.local_records, *(record for record, _ in self.results)])
        if self.save and self.local_records:
            try:
                self.saved = self.store.save(self.local_records, self.run_id, self.process)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                where = exc.filename or self.store.root
                self.save_error = (f"gpucheck: could not save {len(self.local_records)} "
                                   f"benchmark result(s) to {self.store.root}: {reason} "
                                   f"({where})")
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None and self.save:
            workeroutput["gpucheck_bench_save"] = {
                "process": self.process, "records": len(self.local_records),
                "saved": len(self.saved), "error": self.save_error}
        if not self.is_worker:
            self.judge_the_family()
        if self.save_error or any(w.get("error") for w in self.worker_saves) \
                or self.family_regressions or (self.inconclusive_fails and self.undecided):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.is_worker and (self.results or self.save_error or self.worker_saves
                                   or self.peer_error):
            publish(session.config, self)


def benchmark_ids(session: pytest.Session) -> list[str]:
    """The node ids of this run's benchmarks (items that use ``gpu_benchmark``)."""
    return [item.nodeid for item in session.items
            if "gpu_benchmark" in getattr(item, "fixturenames", ())]


def benchmark_files(session: pytest.Session) -> list[str]:
    """The files of this run's benchmarks, as their node ids name them (relative to the
    rootdir, the path a baseline checkout has them at)."""
    return sorted({nodeid.split("::")[0] for nodeid in benchmark_ids(session)})


def foreign_checkout_line(value: str, folder: Path, what: str) -> str:
    """The one line that refuses a baseline folder that is not a checkout of this
    project with the same benchmarks."""
    return (f"--gpu-bench-against={value}: {what} in {folder}, so it is not a checkout of this "
            "project and the gate would compare with nothing; give a checkout of the baseline "
            "code (git worktree add ../base origin/main)")


def predicted_mode(item: pytest.Item) -> str:
    """The process mode (:func:`process_mode`) that will measure ``item``, as the process
    the user started knows it once the items are collected: MPI ranks for an ``mpi``
    item, the simulator's child for one on numba-cudasim, an isolation worker for one a
    router runs in a child (``--gpu-isolate``, ``--gpu-sanitize``), else this process."""
    from pytest_gpucheck.mpi.marker import our_mark
    from pytest_gpucheck.processes import SimulatorRouter, router_for

    if our_mark(item) is not None:  # pytest-mpi's shapes run in this process
        return "MPI rank"
    router = router_for(item)
    if router is None:
        return "in-process"
    return "simulator child" if isinstance(router, SimulatorRouter) else "isolation worker"


def local_device_models(backends: list[str]) -> list[str]:
    """The device models this machine's benchmarks are stored under: its CPU, the CUDA
    simulator on it, and the GPUs the driver reports (asked only when a GPU backend is
    among ``backends``; no framework is imported)."""
    from pytest_gpucheck.backends import GPU_BACKENDS
    from pytest_gpucheck.bench.environment import cpu_model

    models = [cpu_model(), f"CUDA simulator on {cpu_model()}"]
    if any(name in GPU_BACKENDS for name in backends):
        from pytest_gpucheck.backends.devices import cuda_driver

        models += [device.name for device in cuda_driver().devices]
    return models


def session_from_config(config: pytest.Config) -> BenchSession:
    folder = (config.getoption("gpu_bench_baseline") or config.getini("gpu_bench_baseline")
              or str(config.rootpath / DEFAULT_BASELINE_DIR))
    plot = config.getoption("gpu_bench_plot")
    if plot and not str(plot).endswith(".html"):
        raise pytest.UsageError(f"--gpu-bench-plot={plot}: the plot is HTML; "
                                "give a path ending in .html")
    gate, overrides = gate_from_config(config)
    measure = MeasureDefaults(
        rounds=int(float_ini(config, "gpu_bench_rounds")),
        max_rounds=int(float_ini(config, "gpu_bench_max_rounds")),
        warmup_rounds=int(float_ini(config, "gpu_bench_warmup_rounds")),
        l2_flush=bool(config.getoption("gpu_bench_l2_flush")),
        cpu_clock=str(config.getini("gpu_bench_cpu_clock")).strip(),
        replicates=int(float_ini(config, "gpu_bench_replicates")),
        processes=int(float_ini(config, "gpu_bench_processes")),
    )
    if measure.cpu_clock not in CPU_CLOCK_CHOICES:
        raise pytest.UsageError(f"ini gpu_bench_cpu_clock = {measure.cpu_clock!r}; "
                                f"use {', '.join(CPU_CLOCK_CHOICES)}")
    if measure.rounds < 1 or measure.warmup_rounds < 0 or measure.max_rounds < 1:
        raise pytest.UsageError("ini gpu_bench_rounds and gpu_bench_max_rounds must be >= 1 and "
                                "gpu_bench_warmup_rounds >= 0")
    if measure.replicates < 2:
        raise pytest.UsageError(f"ini gpu_bench_replicates = {measure.replicates}; the gate "
                                "needs at least 2 runs per side to see how far placement "
                                f"moves a benchmark; set it to 2 or more ({DEFAULT_REPLICATES} "
                                "by default)")
    if measure.processes < 2:
        raise pytest.UsageError(f"ini gpu_bench_processes = {measure.processes}; the stored "
                                "gate compares one summary per process and needs at least 2 "
                                "processes a side to see how far they spread; set it to 2 or "
                                f"more ({DEFAULT_PROCESSES} by default)")
    against = read_against_folder(config)
    family_level = read_family_level(config)
    measure.budget = read_budget(config)
    pin = read_pin(config)
    inconclusive = read_inconclusive(config)
    if against is not None:
        from pytest_gpucheck.bench.interleave import pinning_plan

        measure.pin, measure.pin_plan = pin, pinning_plan(pin)
        measure.placement_seed = read_placement_seed(config)
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
        against=against,
        family_level=family_level,
        pin=pin,
        process_mode=process_mode(config),
        cross_mode=bool(config.getoption("gpu_bench_cross_mode", False)),
        inconclusive_fails=inconclusive == "fail",
        # Failing by default only where the stored mode's measured rates meet the targets.
        stored_fails=stored_fails(config, MEETS_TARGETS),
    )
    try:
        session.store.check_folder()
        # Comparing needs a baseline, unless this run records one now (the first run
        # with --gpu-bench-compare --gpu-bench-save: every result shows as no-baseline).
        if session.compare and not session.save:
            session.store.require_root("--gpu-bench-compare")
        if session.compare or session.save or session.plot:
            session.store.load_all()
    except BaselineError as exc:
        raise pytest.UsageError(str(exc)) from None
    return session


def process_mode(config: pytest.Config) -> str:
    """The kind of process this is, as a stored baseline records it."""
    from pytest_gpucheck.environment import (
        REPORT_SINK_VARIABLE,
        SIMULATOR_CHILD_VARIABLE,
        launched_rank,
    )

    if launched_rank() is not None:
        return "MPI rank"
    if hasattr(config, "workerinput"):
        return "xdist worker"
    if os.environ.get(SIMULATOR_CHILD_VARIABLE):
        return "simulator child"
    if os.environ.get(REPORT_SINK_VARIABLE):
        return "isolation worker"
    return "in-process"


def hash_seed(seed: int, index: int, role: str) -> int:
    """The placement seed of pair ``index``'s process of ``role``, from the run's seed."""
    import hashlib

    digest = hashlib.sha256(f"{seed}:{index}:{role}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
