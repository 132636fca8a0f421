"""Measure how well ``--gpu-bench-against`` sizes a change, and what identical code reads.

Two measurements, each run the way a user runs the gate:

* ``table`` (the default): the size accuracy of issue 43.  For each backend of
  ``--backends`` (numpy, numba-cpu, torch-cpu) the script writes a temporary git
  project with a real ``conftest.py`` (the arrays fixture), a ``kernels.py`` (the
  user's code) and a ``test_kernels.py`` of six benchmarks: two kinds of slowdown at
  three sizes.  Its baseline commit has the fast kernel everywhere; a checkout of that
  commit is the baseline (``git worktree add ../base HEAD``), and the working tree
  gets the slow kernels.  Then, in a subprocess, ``python -m pytest
  --gpu-bench-against=../base --gpu-report=report.json`` in the working tree, as the
  docs print it.  Each row: the true ratio slow / fast, measured in one process by
  interleaved timeit (blocks A B B A over many repeats, both checkouts' ``kernels.py``
  imported side by side, the gate's framework thread limit of one thread, the allocator
  in the state the gate's processes start in: ``steady_allocator``), against the
  change the gate reported.  A row is within +-20% where the gate's ratio (1 + its
  change) is within 20% of the true ratio: ``|(1 + change) / true - 1| <= 0.20``.  The
  error of the change itself (``change / (true - 1) - 1``) is printed beside it.

  The kinds: ``alloc``, whose slow version makes extra passes that each allocate a
  fresh temporary array of the input's size (as numbagg's ``move_mean`` slow branch
  did: a second pass that allocates), and ``compute``, whose slow version makes extra
  passes in place (more arithmetic, no allocation).  The sizes: extra passes over 30,
  as many as give about 1.1x, 1.5x and 3x on that backend and kind (calibrated first
  in a child process: an allocating pass costs more than an arithmetic one); the true
  ratio measured afterwards is what the gate is held to.

* ``aa``: identical code on both sides.  The same user project with no change
  (``--project user``), or the bundled suite ``conformance/bench_kernels.py`` of this
  checkout against an exported copy of its ``HEAD`` (``--project bundled``), run
  ``--sessions`` times per backend.  Per backend: the mean change over the pairs of
  processes of every session (the independent unit: the first look's pairs serve every
  benchmark of a session and count once, averaged over its benchmarks; a later look's
  pairs serve one benchmark), with its 95% t interval, whether it lies within +-1%, and
  the one-way test of a session effect (which would make the pooled interval too
  narrow); beside it the mean over sessions; and the
  order effects of issue 43 from the pairs' blocks: the first block against the
  pair's other blocks; the pairs the baseline starts against those the candidate
  starts; and the pairs with the baseline on the first CPU half against the second
  (crossed with the start side over every four pairs, so read apart).

Usage::

    python scripts/measure_accuracy.py table [--backends numpy numba-cpu torch-cpu]
    python scripts/measure_accuracy.py table --backends numba-cpu torch-cpu \
        --ini "gpu_bench_cpu_clock = process"
    python scripts/measure_accuracy.py aa --project user --sessions 3
    python scripts/measure_accuracy.py aa --project bundled --backends numpy --sessions 1
    python scripts/measure_accuracy.py aa --backends numpy --replay FOLDER [FOLDER ...]

``--replay`` pools the sessions earlier runs kept with ``--outputs`` (their JSON
reports), without running any.  ``--evidence FOLDER`` writes each session it reads
(run or replayed) there as the verdicts' fields this analysis reads, about 2 KB a
benchmark, which ``--replay`` reads as it reads a report: small enough to commit, so
that sessions of one regime measured on different days and machines are pooled
(``docs/aa-evidence/``).

Each run prints its rows with the load average beside them (the machine may be
shared) and, with ``--outputs FOLDER``, keeps every session's pytest output and JSON
report there.  Exit status 0 when every measured row is within +-20% (``table``),
1 otherwise; ``aa`` exits 0 when every session gave a verdict to every benchmark.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from pytest_gpucheck.bench.settings import DEFAULT_REPLICATES

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("numpy", "numba-cpu", "torch-cpu")
KINDS = ("alloc", "compute")
#: The sizes of change aimed at (the slow version's extra passes over :data:`PASSES`
#: are calibrated per backend and kind to give about these ratios).
STEPS = ("1.1", "1.5", "3")
PASSES = 30
#: Extra passes timed to calibrate the cost of one.
PROBE = 6
#: Elements of the float64 arrays: 2^18, 2 MiB (the size issue 43's numbagg kernel ran
#: at), far above glibc's initial 128 KiB mmap threshold, so each temporary of the
#: ``alloc`` kind is a large allocation.
SIZE = 1 << 18
#: Within +-20%: the gate's ratio over the true ratio (issue 43's done-when).
TOLERANCE = 0.20
#: The A/A target of issue 43: identical code's mean change within +-1%.
A_A_TARGET = 0.01

#: The user's code.  ``EXTRA[(kind, step)]`` is how many extra passes the slow version
#: makes: all 0 in the baseline commit (the fast kernel), :data:`STEPS` in the working
#: tree.
KERNELS = '''\
"""The project's kernels: {passes} passes over x into out, and EXTRA more."""
import numpy as np

PASSES = {passes}
EXTRA = {extra!r}


def numpy_kernel(kind, step, x, out):
    np.copyto(out, x)
    for _ in range(PASSES):
        np.multiply(out, 0.999, out=out)
        np.add(out, x, out=out)
    for _ in range(EXTRA[(kind, step)]):
        if kind == "alloc":
            tmp = x * 0.5  # a fresh temporary the size of x
            np.add(out, tmp, out=out)
        else:
            np.multiply(out, 0.999, out=out)
            np.add(out, x, out=out)
    return out


def torch_kernel(kind, step, x, out):
    import torch

    out.copy_(x)
    for _ in range(PASSES):
        torch.mul(out, 0.999, out=out)
        out.add_(x)
    for _ in range(EXTRA[(kind, step)]):
        if kind == "alloc":
            tmp = x * 0.5  # a fresh temporary the size of x
            out.add_(tmp)
        else:
            torch.mul(out, 0.999, out=out)
            out.add_(x)
    return out


_numba = None


def numba_kernel(kind, step, x, out):
    global _numba
    if _numba is None:
        from numba import njit

        @njit
        def run(passes, extra, alloc, x, out):
            n = x.size
            for i in range(n):
                out[i] = x[i]
            for _ in range(passes):
                for i in range(n):
                    out[i] = out[i] * 0.999 + x[i]
            for _ in range(extra):
                if alloc:
                    tmp = np.empty(n)  # a fresh temporary the size of x
                    for i in range(n):
                        tmp[i] = x[i] * 0.5
                    for i in range(n):
                        out[i] = out[i] + tmp[i]
                else:
                    for i in range(n):
                        out[i] = out[i] * 0.999 + x[i]
            return out

        _numba = run
    return _numba(PASSES, EXTRA[(kind, step)], kind == "alloc", x, out)


def run(backend, kind, step, x, out):
    if backend == "torch-cpu":
        return torch_kernel(kind, step, x, out)
    if backend == "numba-cpu":
        return numba_kernel(kind, step, x, out)
    return numpy_kernel(kind, step, x, out)
'''

CONFTEST = '''\
import numpy as np
import pytest


@pytest.fixture
def arrays(gpu_backend):
    x = gpu_backend.to_device(np.random.default_rng(0).random({size}))
    out = gpu_backend.empty(({size},), np.float64)
    return x, out
'''

TEST = '''\
import pytest

import kernels


@pytest.mark.parametrize("step", {steps!r})
@pytest.mark.parametrize("kind", {kinds!r})
def test_kernel(gpu_backend, gpu_benchmark, arrays, kind, step):
    x, out = arrays
    gpu_benchmark(kernels.run, gpu_backend.name, kind, step, x, out)
'''

INI = '''\
[pytest]
gpu_backends = {backend}
addopts = -p no:hypothesispytest -p no:cacheprovider
'''


def kernels_source(slow: dict[tuple[str, str], int] | None) -> str:
    """``kernels.py`` of the fast (baseline) version, or of the slow one (the working
    tree) with ``slow``'s extra passes per (kind, step)."""
    extra = {(kind, step): (slow or {}).get((kind, step), 0) for kind in KINDS
             for step in STEPS}
    return KERNELS.format(passes=PASSES, extra=extra)


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@x",
                        "GIT_COMMITTER_NAME": "m", "GIT_COMMITTER_EMAIL": "m@x"})


def write_project(root: Path, backend: str, slow: bool, ini: tuple[str, ...] = ()
                  ) -> tuple[Path, Path]:
    """The user project under ``root/project`` and its baseline checkout ``root/base``
    (``git worktree add`` of the fast commit).  With ``slow``, the working tree's
    ``kernels.py`` gets the extra passes :func:`calibrate` finds for ``backend``."""
    project = root / "project"
    project.mkdir(parents=True)
    # Settings go into the committed ini, so that both checkouts have them: a ``-o``
    # on the command line reaches the candidate's processes and not the baseline's
    # (their timing methods then differ and every verdict is NOT-COMPARABLE).
    (project / "pytest.ini").write_text(INI.format(backend=backend)
                                        + "".join(f"{line}\n" for line in ini))
    (project / "conftest.py").write_text(CONFTEST.format(size=SIZE))
    (project / "test_kernels.py").write_text(TEST.format(steps=list(STEPS), kinds=list(KINDS)))
    (project / "kernels.py").write_text(kernels_source(None))
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "fast kernels")
    git(project, "worktree", "add", "-q", "../base", "HEAD")
    if slow:
        (project / "kernels.py").write_text(kernels_source(calibrate(backend, root / "base",
                                                                      project)))
    return project, root / "base"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class TrueRatio:
    """The in-process ratio slow / fast of one kernel: the median of the per-repeat
    ratios (each repeat a block A B B A), its 95% interval (order statistics of the
    median) and the interquartile range of the per-repeat ratios."""

    median: float
    low: float
    high: float
    q1: float
    q3: float
    repeats: int
    fast_seconds: float
    #: Minor page faults per call of each kernel in this process (the gate's JSON holds
    #: the candidate's, ``page_faults_per_call``): an allocating kernel's cost moves
    #: with whether its temporaries fault in fresh pages, which depends on the heap's
    #: state (glibc's dynamic mmap and trim thresholds), so the row says which regime
    #: each side timed.
    fast_faults: float = 0.0
    slow_faults: float = 0.0


def true_ratio(fast: Any, slow: Any, seconds: float = 8.0, clock: Any = time.process_time
               ) -> TrueRatio:
    """Interleaved timeit of two calls: blocks A B B A of ``number`` calls each (about
    5 ms per timing) for about ``seconds``; per block the ratio of B's two timings to
    A's two.  The block order cancels what one call leaves for the next (as the gate's
    own blocks do).  The clock is this process's CPU time: on one framework thread it is
    the calls' own cost, page faults included (system time), and not the time other
    processes of a shared machine held the CPU."""
    for _ in range(3):
        fast()
        slow()
    start = clock()
    fast()
    once = max(clock() - start, 1e-7)
    number = max(1, round(0.005 / once))
    ratios: list[float] = []
    fast_times: list[float] = []
    faults = {fast: 0, slow: 0}
    ends = time.perf_counter() + seconds
    while time.perf_counter() < ends or len(ratios) < 20:
        times = []
        for call in (fast, slow, slow, fast):
            before = minor_faults()
            start = clock()
            for _ in range(number):
                call()
            times.append(clock() - start)
            faults[call] += minor_faults() - before
        ratios.append((times[1] + times[2]) / (times[0] + times[3]))
        fast_times.append((times[0] + times[3]) / (2 * number))
    ratios.sort()
    n = len(ratios)
    # Order statistics of the median's 95% interval (normal approximation of the binomial).
    half = 1.96 * math.sqrt(n) / 2
    low = ratios[max(0, math.floor(n / 2 - half))]
    high = ratios[min(n - 1, math.ceil(n / 2 + half))]
    calls = 2 * number * n
    return TrueRatio(float(np.median(ratios)), low, high, float(np.percentile(ratios, 25)),
                     float(np.percentile(ratios, 75)), n, float(np.median(fast_times)),
                     faults[fast] / calls, faults[slow] / calls)


def minor_faults() -> int:
    """This process's minor page faults so far (0 where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # not on Linux or macOS
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def child_setup(backend: str, base: Path, project: Path
                ) -> tuple[ModuleType, ModuleType, Any, tuple[Any, Any]]:
    """Both checkouts' ``kernels.py`` imported side by side, and the arrays; the
    allocator first put where the gate's measured processes put it (without it, whether
    an allocating kernel's temporaries are faulted in afresh on every call depends on
    this process's history, as it did in the gate's before: docs/benchmark-accuracy.md)."""
    from pytest_gpucheck.bench.placement import steady_allocator

    steady_allocator()
    fast_mod = load(base / "kernels.py", "kernels_fast")
    slow_mod = load(project / "kernels.py", "kernels_slow")
    host = np.random.default_rng(0).random(SIZE)
    if backend == "torch-cpu":
        import torch

        torch.set_num_threads(1)
        x = torch.from_numpy(host.copy())
        outs = (torch.empty(SIZE, dtype=torch.float64), torch.empty(SIZE, dtype=torch.float64))
    else:
        x = host.copy()
        outs = (np.empty(SIZE), np.empty(SIZE))
    return fast_mod, slow_mod, x, outs


def true_ratios_child(backend: str, base: Path, project: Path, seconds: float,
                      calibrate: bool) -> None:
    """In the child process that measures the true ratios: one JSON line per kernel.

    With ``calibrate``, the extra passes that give about each target ratio instead:
    the cost of :data:`PROBE` extra passes of each kind, timed as the true ratio is,
    scaled to the targets 1.1, 1.5 and 3 (one pass at least)."""
    fast_mod, slow_mod, x, outs = child_setup(backend, base, project)
    for kind in KINDS:
        for step in (STEPS if not calibrate else ("1.5",)):
            def fast(kind: str = kind, step: str = step) -> Any:
                return fast_mod.run(backend, kind, step, x, outs[0])

            def slow(kind: str = kind, step: str = step) -> Any:
                return slow_mod.run(backend, kind, step, x, outs[1])

            if calibrate:
                slow_mod.EXTRA[(kind, step)] = PROBE
                per_pass = (true_ratio(fast, slow, seconds).median - 1) / PROBE
                extra = {target: max(1, round((float(target) - 1) / max(per_pass, 1e-3)))
                         for target in STEPS}
                print(json.dumps({"kind": kind, "per_pass": per_pass, "extra": extra}),
                      flush=True)
                continue
            result = true_ratio(fast, slow, seconds)
            print(json.dumps({"kind": kind, "step": step, **result.__dict__}), flush=True)


#: The thread limits the gate gives each side on this machine's 2 CPUs (one framework
#: thread: ``--gpu-bench-pin=split``), so that the true ratio is of the same program.
THREADS_ENV = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")}


def child(backend: str, base: Path, project: Path, seconds: float, what: str
          ) -> list[dict[str, Any]]:
    """Run this script's ``what`` (``true-child`` or ``calibrate-child``) in a child
    process with the gate's thread limits: its JSON lines."""
    run = subprocess.run([sys.executable, __file__, what, "--backends", backend,
                          "--base", str(base), "--project", str(project),
                          "--seconds", str(seconds)],
                         capture_output=True, text=True, env={**os.environ, **THREADS_ENV})
    if run.returncode:
        raise SystemExit(f"the {what} process for {backend} exited {run.returncode}:\n"
                         f"{run.stderr[-3000:]}")
    return [json.loads(line) for line in run.stdout.splitlines()]


def calibrate(backend: str, base: Path, project: Path) -> dict[tuple[str, str], int]:
    """The extra passes per (kind, step) that give about 1.1x, 1.5x and 3x on this
    backend here (an allocating pass costs more than an arithmetic one, and how much
    depends on the backend)."""
    extra: dict[tuple[str, str], int] = {}
    for data in child(backend, base, project, 2.0, "calibrate-child"):
        for step, count in data["extra"].items():
            extra[(data["kind"], step)] = int(count)
    return extra


def measure_true(backend: str, base: Path, project: Path, seconds: float
                 ) -> dict[tuple[str, str], TrueRatio]:
    """The true ratio of each (kind, step), in a child process (:func:`true_ratio`)."""
    rows = {}
    for data in child(backend, base, project, seconds, "true-child"):
        key = (data.pop("kind"), data.pop("step"))
        rows[key] = TrueRatio(**data)
    return rows


def run_gate(project: Path, report: Path, args: argparse.Namespace, label: str,
             against: tuple[str, ...] = ("--gpu-bench-against=../base",)
             ) -> tuple[list[dict[str, Any]], str, float]:
    """``python -m pytest --gpu-bench-against=../base`` in ``project`` (or the arguments
    ``against``): the JSON report's benchmark results, the pytest output and the wall
    seconds."""
    report.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-rA", *against,
               f"--gpu-report={report}", *args.pytest_args]
    started = time.perf_counter()
    run = subprocess.run(command, cwd=project, capture_output=True, text=True)
    wall = time.perf_counter() - started
    output = run.stdout + run.stderr
    if args.outputs is not None:
        args.outputs.mkdir(parents=True, exist_ok=True)
        (args.outputs / f"{label}.txt").write_text(" ".join(command[1:]) + "\n" + output)
        if report.exists():
            shutil.copyfile(report, args.outputs / f"{label}.json")
    if not report.exists():
        return [], output, wall
    results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
    return results, output, wall


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def when(before: str) -> str:
    """The load beside a session's line: before and after a run; a replayed session
    has none kept, and this machine's load now says nothing about it."""
    return "replayed" if before == "kept" else f"{before} before, {load_text()} after"


def key_of(name: str) -> tuple[str, str]:
    """(kind, step) of ``test_kernels.py::test_kernel[numpy-alloc-1.5]`` (any id order)."""
    inner = name.rsplit("[", 1)[-1].rstrip("]")
    parts = inner.split("-")
    kind = next(p for p in parts if p in KINDS)
    step = next(p for p in reversed(parts) if p in STEPS)
    return kind, step


def gate_faults(result: dict[str, Any]) -> str:
    """The candidate processes' median minor page faults per call, from the report."""
    value = (result.get("record") or {}).get("extra", {}).get("page_faults_per_call")
    return "?" if value is None else f"{float(value):.0f}"


def table(args: argparse.Namespace) -> int:
    within_all = True
    print("backend    kind     step  true ratio [95% CI] (IQR)          gate change [CI]"
          "                  gate/true  change err  verdict      within")
    for backend in args.backends:
        with tempfile.TemporaryDirectory(prefix="gpucheck-accuracy-") as tmp:
            project, base = write_project(Path(tmp), backend, slow=True, ini=tuple(args.ini))
            before = load_text()
            truth = measure_true(backend, base, project, args.seconds)
            results, output, wall = run_gate(project, Path(tmp) / "report.json", args,
                                             f"table-{backend}")
            after = load_text()
            if not results:
                print(f"{backend}: no gate results (wall {wall:.0f} s):\n{output[-3000:]}")
                within_all = False
                continue
            for result in sorted(results, key=lambda r: key_of(r["record"]["name"])):
                key = key_of(result["record"]["name"])
                verdict = result.get("verdict") or {}
                true = truth[key]
                change = verdict.get("change")
                interval = verdict.get("interval") or [math.nan, math.nan]
                if change is None:
                    print(f"{backend:10} {key[0]:8} {key[1]:4}  no change: {verdict}")
                    within_all = False
                    continue
                ratio = (1 + change) / true.median
                error = change / (true.median - 1) - 1 if true.median != 1 else math.nan
                within = abs(ratio - 1) <= TOLERANCE
                within_all &= within
                print(f"{backend:10} {key[0]:8} {key[1]:4}  {true.median:.3f} [{true.low:.3f}, "
                      f"{true.high:.3f}] ({true.q1:.3f}-{true.q3:.3f}, n={true.repeats})  "
                      f"{change:+7.1%} [{interval[0]:+.1%}, {interval[1]:+.1%}]  "
                      f"{ratio:9.3f}  {error:+9.1%}  {verdict.get('status', '?'):11}  "
                      f"{'yes' if within else 'NO'}  faults/call slow {true.slow_faults:.0f} "
                      f"in-process, {gate_faults(result)} in the gate's candidate", flush=True)
            print(f"{backend}: fast kernel {truth[('compute', '1.1')].fast_seconds * 1e3:.2f} "
                  f"ms/call in-process; gate run {wall:.0f} s; {before} before, {after} after",
                  flush=True)
    print("every row within +-20% (gate ratio / true ratio in [0.80, 1.20]): "
          f"{'yes' if within_all else 'NO'}")
    return 0 if within_all else 1


def blocks_effects(results: list[dict[str, Any]]) -> tuple[list[float], list[float],
                                                             list[float]]:
    """Per benchmark: the first block's log ratio minus the mean of the pair's other
    blocks (averaged over its pairs); the mean figure of the pairs the baseline starts
    minus those the candidate starts (:func:`first_side`); and the mean figure of the
    pairs with the baseline on the first CPU half minus those with it on the second
    (:func:`cpu_half`).  The two last are crossed over every four pairs, so each is read
    free of the other; a benchmark with fewer than four pairs gives neither."""
    from pytest_gpucheck.bench.interleave import SIDES, cpu_half, first_side

    first: list[float] = []
    start: list[float] = []
    half: list[float] = []
    for result in results:
        verdict = result.get("verdict") or {}
        blocks = verdict.get("pair_blocks") or []
        diffs = [b[0] - float(np.mean(b[1:])) for b in blocks if len(b) >= 2]
        if diffs:
            first.append(float(np.mean(diffs)))
        figures = verdict.get("pair_figures") or []
        if len(figures) < 4:
            continue
        # Whole cycles only: a partial one would weigh one start-and-half combination
        # more than another and leak one effect into the other's contrast.
        figures = figures[:len(figures) - len(figures) % 4]
        start.append(_contrast(figures, lambda k: first_side(k) == SIDES[0]))
        half.append(_contrast(figures, lambda k: cpu_half(k, SIDES[0]) == 0))
    return first, start, half


def _contrast(figures: list[float], chosen: Any) -> float:
    """Mean of the figures of the pairs ``chosen(k)`` picks minus the mean of the rest."""
    picked = [f for k, f in enumerate(figures) if chosen(k)]
    rest = [f for k, f in enumerate(figures) if not chosen(k)]
    return float(np.mean(picked) - np.mean(rest))


def pair_units(results: list[dict[str, Any]], replicates: int = DEFAULT_REPLICATES
               ) -> list[float]:
    """One session's independent units: each pair of processes' mean log ratio over
    the benchmarks it timed (:func:`indexed_pair_units` without the indices)."""
    return [figure for _, figure in indexed_pair_units(results, replicates)]


def indexed_pair_units(results: list[dict[str, Any]], replicates: int = DEFAULT_REPLICATES
                       ) -> list[tuple[int, float]]:
    """One session's independent units, each with its pair index (which decides its
    start side and CPU half).  Pairs ``0 .. replicates - 1`` serve every benchmark of
    the session (one unit each, averaged over the benchmarks); the pairs a benchmark's
    later looks start are retired after it (``BenchSession.retire_extra_pairs``), so
    each of those is a unit of its own.  A benchmark's figures are indexed by pair
    (``verdict.pair_figures``)."""
    shared: dict[int, list[float]] = {}
    own: list[tuple[int, float]] = []
    for result in results:
        for index, figure in enumerate((result.get("verdict") or {}).get("pair_figures") or []):
            if index < replicates:
                shared.setdefault(index, []).append(float(figure))
            else:
                own.append((index, float(figure)))
    return [(index, float(np.mean(figures))) for index, figures in sorted(shared.items())] \
        + own


def pair_contrasts(units: list[tuple[int, float]]) -> str:
    """The start-side and CPU-half contrasts over pairs of processes (the unit), each
    with its 95% Welch interval: the pairs the baseline starts minus those the
    candidate starts, and the pairs with the baseline on CPU half 0 minus half 1."""
    from scipy import stats

    from pytest_gpucheck.bench.interleave import SIDES, cpu_half, first_side

    def contrast(chosen: Any) -> str:
        picked = [f for k, f in units if chosen(k)]
        rest = [f for k, f in units if not chosen(k)]
        if len(picked) < 2 or len(rest) < 2:
            return "too few pairs"
        va, vb = np.var(picked, ddof=1) / len(picked), np.var(rest, ddof=1) / len(rest)
        diff, sem = float(np.mean(picked) - np.mean(rest)), math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (len(picked) - 1) + vb ** 2 / (len(rest) - 1))
        half = float(stats.t.ppf(0.975, df)) * sem
        return (f"{math.expm1(diff):+.2%} [95% CI {math.expm1(diff - half):+.2%}, "
                f"{math.expm1(diff + half):+.2%}] ({len(picked)} against {len(rest)} pairs)")

    return (f"baseline starts minus candidate starts "
            f"{contrast(lambda k: first_side(k) == SIDES[0])}; baseline on CPU half 0 minus "
            f"half 1 "
            f"{contrast(lambda k: cpu_half(k, SIDES[0]) == 0)}")


def pooled_pairs(sessions: list[list[float]]) -> str:
    """The mean change over every session's pairs (the pair of processes is the unit)
    with its 95% t interval, whether it lies within +-1%, and the one-way test of a
    session effect (a shared condition of one run, such as its load, that would make
    its pairs move together and the pooled interval too narrow)."""
    from scipy import stats

    units = [unit for session in sessions for unit in session]
    if len(units) < 2:
        return "fewer than 2 pairs"
    line = mean_interval(units)
    mean = float(np.mean(units))
    sem = float(np.std(units, ddof=1)) / math.sqrt(len(units))
    half = float(stats.t.ppf(0.975, len(units) - 1)) * sem
    low, high = math.expm1(mean - half), math.expm1(mean + half)
    inside = low >= -A_A_TARGET and high <= A_A_TARGET
    line += (f"; between-pair SD {math.expm1(float(np.std(units, ddof=1))):.2%}; mean "
             f"{'within' if abs(math.expm1(mean)) <= A_A_TARGET else 'OUTSIDE'} +-1%, "
             f"interval {'within' if inside else 'not within'} +-1%")
    groups = [session for session in sessions if len(session) >= 2]
    if len(groups) >= 2:
        test = stats.f_oneway(*groups)
        line += (f"; session effect F={float(test.statistic):.2f}, "
                 f"p={float(test.pvalue):.3g} over {len(groups)} sessions")
    return line


def mean_interval(values: list[float]) -> str:
    """Mean of log values as a change, with its 95% t interval."""
    from scipy import stats

    if not values:
        return "none"
    mean = float(np.mean(values))
    if len(values) < 2:
        return f"{math.expm1(mean):+.2%} (one value, no interval)"
    sem = float(np.std(values, ddof=1)) / math.sqrt(len(values))
    t = float(stats.t.ppf(0.975, len(values) - 1))
    return (f"{math.expm1(mean):+.2%} [95% CI {math.expm1(mean - t * sem):+.2%}, "
            f"{math.expm1(mean + t * sem):+.2%}] (n={len(values)})")


def aa_session(args: argparse.Namespace, backend: str, session: int
               ) -> tuple[list[dict[str, Any]], str, float]:
    """One A/A session: identical code on both sides, run as a user runs the gate."""
    with tempfile.TemporaryDirectory(prefix="gpucheck-aa-") as tmp:
        root = Path(tmp)
        if args.project == "user":
            project, _ = write_project(root, backend, slow=False, ini=tuple(args.ini))
            against: tuple[str, ...] = ("--gpu-bench-against=../base",)
        else:
            project = ROOT
            base = root / "base"
            base.mkdir()
            # The baseline: this checkout's HEAD, exported (identical code).
            archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT,
                                     capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
            # -n 0: this checkout's addopts start xdist workers.
            against = (f"--gpu-bench-against={base}", "conformance/bench_kernels.py",
                       f"--gpu-backends={backend}", "--benchmark-only", "-n", "0",
                       "-p", "no:cacheprovider")
        return run_gate(project, root / "report.json", args,
                        f"aa-{args.project}-{backend}-{session}", against)


def run_sessions(args: argparse.Namespace, backend: str) -> Any:
    """``--sessions`` A/A sessions, one after the other: (name, results, output, wall,
    load before)."""
    for session in range(args.sessions):
        before = load_text()
        results, output, wall = aa_session(args, backend, session)
        yield f"session {session}", results, output, wall, before


def kept_sessions(folders: list[Path], project: str, backend: str
                  ) -> list[tuple[str, list[dict[str, Any]]]]:
    """The A/A sessions earlier runs kept with ``--outputs`` (their JSON reports)."""
    kept = []
    for folder in folders:
        for report in sorted(folder.glob(f"aa-{project}-{backend}-*.json")):
            results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
            kept.append((f"{folder.name}/{report.stem}", results))
    return kept


#: The fields of a verdict the A/A analysis reads, and what they are (``--evidence``).
EVIDENCE_FIELDS = ("name", "backend", "status", "change", "interval", "looks", "stopped",
                   "noise", "pair_figures", "pair_blocks")


def write_evidence(folder: Path, project: str, backend: str, name: str,
                   results: list[dict[str, Any]]) -> Path:
    """One session's verdicts, :data:`EVIDENCE_FIELDS` only, as a report :func:`kept_sessions`
    reads (``aa-PROJECT-BACKEND-LABEL.json``, the label from ``name``)."""
    name = name.replace(f"aa-{project}-{backend}-", "")
    label = "".join(c if c.isalnum() or c in "_.-" else "." for c in name).strip(".")
    return keep_session(folder / f"aa-{project}-{backend}-{label}.json", results,
                        EVIDENCE_FIELDS)


def keep_session(path: Path, results: list[dict[str, Any]], fields: tuple[str, ...]) -> Path:
    """Write one session's ``results`` (a JSON report's) to ``path`` as evidence, in the
    report's shape a ``--replay`` reads: each verdict with ``fields`` only (None where the
    gate gave none: the replay counts its status), floats to 7 significant digits (a log
    ratio to 1e-7 or finer, far below the 0.01% the analyses print).  A file already
    there is refused with one line: a session written twice would count twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    verdicts = [{"verdict": {key: _short(value) for key, value in result["verdict"].items()
                             if key in fields} if result.get("verdict") else None}
                for result in results]
    try:
        with path.open("x") as out:
            out.write(json.dumps({"sections": {"benchmarks": {"results": verdicts}}}) + "\n")
    except FileExistsError:
        raise SystemExit(f"--evidence: {path} exists (a session written twice, or two "
                         "replayed folders of one name): give an empty folder") from None
    return path


def _short(value: Any) -> Any:
    """``value`` with every float to 7 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, list):
        return [_short(item) for item in value]
    return value


def aa(args: argparse.Namespace) -> int:
    complete = True
    started = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for backend in args.backends:
        session_means: list[float] = []
        session_pairs: list[list[float]] = []
        indexed: list[tuple[int, float]] = []
        all_figures: list[float] = []
        firsts: list[float] = []
        starts: list[float] = []
        halves: list[float] = []
        statuses: dict[str, int] = {}
        walls: list[float] = []
        if args.replay:
            sessions: Any = ((name, results, "", math.nan, "kept")
                             for name, results in kept_sessions(args.replay, args.project,
                                                                backend))
        else:
            sessions = run_sessions(args, backend)
        for name, results, output, wall, before in sessions:
            walls.append(wall)
            compared = [r for r in results if (r.get("verdict") or {}).get("pair_figures")]
            if not compared:
                complete = False
                print(f"{backend} {name}: no compared benchmark (wall {wall:.0f} s)"
                      f":\n{output[-2000:]}", flush=True)
                continue
            if args.evidence is not None:
                label = name if args.replay else f"{started}.{name}"
                write_evidence(args.evidence, args.project, backend, label, results)
            means = [float(np.mean(r["verdict"]["pair_figures"])) for r in compared]
            session_means.append(float(np.mean(means)))
            session_pairs.append(pair_units(compared))
            indexed += indexed_pair_units(compared)
            all_figures += means
            first, start, half = blocks_effects(compared)
            firsts += first
            starts += start
            halves += half
            for r in results:
                status = (r.get("verdict") or {}).get("status", "none")
                statuses[status] = statuses.get(status, 0) + 1
            print(f"{backend} {name}: mean change "
                  f"{math.expm1(session_means[-1]):+.2%} over {len(compared)} benchmarks "
                  f"and {len(session_pairs[-1])} pairs of processes "
                  f"({', '.join(f'{math.expm1(m):+.1%}' for m in means)}); wall {wall:.0f} s; "
                  f"{when(before)}", flush=True)
        print(f"{backend} A/A ({args.project}): sessions' mean change "
              f"{mean_interval(session_means)}; benchmarks' mean change "
              f"{mean_interval(all_figures)} (benchmarks of one session share its pairs); "
              f"verdicts {statuses}; wall {sum(walls):.0f} s", flush=True)
        print(f"{backend} A/A ({args.project}) over pairs of processes (the unit): "
              f"{pooled_pairs(session_pairs)}", flush=True)
        print(f"{backend} order over pairs of processes: {pair_contrasts(indexed)}",
              flush=True)
        print(f"{backend} order: first block minus the pair's other blocks "
              f"{mean_interval(firsts)}; baseline starts minus candidate starts "
              f"{mean_interval(starts)}; baseline on CPU half 0 minus half 1 "
              f"{mean_interval(halves)}", flush=True)
    return 0 if complete else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="table",
                        choices=("table", "aa", "true-child", "calibrate-child"))
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--project", default="user",
                        help="aa: 'user' (the kernels project, no change) or 'bundled' "
                        "(conformance/bench_kernels.py of this checkout); true-child: the "
                        "working tree")
    parser.add_argument("--base", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sessions", type=int, default=3, help="aa: sessions per backend")
    parser.add_argument("--replay", type=Path, nargs="+", default=None, metavar="FOLDER",
                        help="aa: pool the sessions earlier runs kept with --outputs in "
                        "these folders, without running any")
    parser.add_argument("--evidence", type=Path, default=None, metavar="FOLDER",
                        help="aa: write each session (run or replayed) there as the "
                        "verdicts' fields the analysis reads, for --replay")
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="table: seconds of interleaved timeit per kernel for the true ratio")
    parser.add_argument("--outputs", type=Path, default=None,
                        help="a folder to keep each run's pytest output and JSON report in")
    parser.add_argument("--ini", action="append", default=[], metavar="LINE",
                        help="a line for the user project's pytest.ini, in both checkouts "
                        "(e.g. 'gpu_bench_cpu_clock = process'); repeatable")
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                        help="the rest is passed to each gate run's pytest (e.g. "
                        "--gpu-bench-budget=60)")
    args = parser.parse_args(argv)
    if args.what in ("true-child", "calibrate-child"):
        true_ratios_child(args.backends[0], args.base, Path(args.project), args.seconds,
                          args.what == "calibrate-child")
        return 0
    if args.evidence is not None and any(
            args.evidence.resolve() == folder.resolve() for folder in args.replay or ()):
        parser.error("--evidence: a folder --replay reads would count its sessions twice; "
                     "give another folder")
    if args.what == "aa":
        return aa(args)
    return table(args)


if __name__ == "__main__":
    raise SystemExit(main())
