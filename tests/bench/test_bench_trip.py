"""A benchmark's trip through the package under ``--gpu-bench-against``.

``docs/architecture.md`` (A benchmark's trip) draws the path one benchmark takes in the
process the user started, from its fixture to its verdict: here a profiler follows it
in a user's run (``pytest --gpu-bench-against=../baseline``, two pairs of processes),
so a change that sends it through a file the drawing does not name, back into a file
it came from (``_interleaved`` once called up into ``bench/plugin.py`` ten times
through the closures handed to the fixture), or computes a verdict's figures again for
the same decision (``judge_pairs`` ran four times and ``pair_test`` seven for one
benchmark), fails.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from bench_projects import SMALL_GATE_INI
from trip_tracing import CHAIN, trip
from user_runs import run_pytest

REPO = Path(__file__).resolve().parents[2]

#: The files of the package a benchmark's trip enters in the user's process, as
#: docs/architecture.md lists them (A benchmark's trip).
TRIP_FILES = {
    # the fixture, its way through the gate, the session's state, pytest-benchmark's relay
    "bench/plugin.py", "bench/run.py", "bench/fixture.py", "bench/session.py",
    "bench/relay.py",
    # the backend the benchmark times (its fixture's default, NumPy) and its clock
    "backends/__init__.py", "backends/base.py", "backends/host_arrays.py",
    "backends/numpy/__init__.py", "backends/numpy/backend.py", "backends/timing.py",
    # timing beside the baseline checkout: the mode, the pairs' protocol, their processes,
    # SIGTERM made an exception while they are timed
    "bench/timed.py", "bench/paired.py", "bench/peers.py", "bench/interleave.py",
    "bench/placement.py", "processes/peers.py", "processes/guard.py",
    # one round: the clock, the calls, the device facts, the record
    "bench/timing.py", "bench/measure.py", "bench/environment.py", "bench/records.py",
    # the verdict: the looks, its settings, figures, decision and lines
    "bench/sequential.py", "bench/gate/settings.py", "bench/gate/figures.py",
    "bench/stats.py", "bench/gate/judge.py", "bench/gate/verdict.py",
    "bench/gate/format.py",
}

#: The candidate's conftest: in the process the user started (not in a peer), record
#: for every call into the package while the benchmark's item runs the files of the
#: package on the call stack (callee first, repeats in a row merged) up to the first
#: hook call, for the chains that start in the benchmark package; and, over the whole
#: run, the arguments of every computation of a pair verdict's figures.
TRACER = '''
import json, os, sys
import pytest
import pytest_gpucheck

PACKAGE = os.path.dirname(pytest_gpucheck.__file__) + os.sep
STATS = os.path.join(PACKAGE, "bench", "stats.py")
FIGURES = ("pair_test", "pair_power")
TRACE = {"chains": [], "figures": []}

''' + CHAIN + '''

def _figures(frame):
    args = {k: v for k, v in frame.f_locals.items() if k != "frame"}
    values = {k: ([float(x) for x in v] if k == "figures" else float(v))
              for k, v in args.items()}
    return [frame.f_code.co_name, json.dumps(values, sort_keys=True)]


def _profile(tracing_item):
    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        if frame.f_code.co_filename == STATS and frame.f_code.co_name in FIGURES:
            TRACE["figures"].append(_figures(frame))
        if tracing_item:
            chain = _chain(frame)
            if chain and chain[-1].startswith("bench" + os.sep):
                TRACE["chains"].append(chain)
    return profile


def _lead(config):
    return config.getoption("gpu_bench_peer", None) is None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not _lead(item.config):
        return (yield)
    sys.setprofile(_profile(True))
    try:
        return (yield)
    finally:
        sys.setprofile(None)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    if not _lead(session.config):
        return (yield)
    sys.setprofile(_profile(False))
    try:
        return (yield)
    finally:
        sys.setprofile(None)
        with open(os.environ["TRIP_RECORD"], "w", encoding="utf-8") as out:
            json.dump(TRACE, out)
'''

#: The smallest gate a run can have: the trip, not the gate's power, is what is held.
INI = SMALL_GATE_INI

BENCH = textwrap.dedent("""\
    import numpy as np


    def saxpy(x, y):
        return np.float32(2.5) * x + y


    def test_saxpy(gpu_benchmark):
        x = np.ones(1 << 14, np.float32)
        y = np.ones_like(x)
        result = gpu_benchmark(saxpy, x, y)
        assert float(result[0]) == 3.5
    """)


def figures_repeated(calls: list[list[str]]) -> list[list[str]]:
    """The computations of a verdict's figures made more than once with the same
    arguments (the same decision computed again)."""
    return [json.loads(json.dumps(call)) for call, count in
            Counter(tuple(call) for call in calls).items() if count > 1]


def test_the_measure_tells_a_figure_computed_twice_for_one_decision() -> None:
    """The measure itself: the same pair test twice is told, two looks at other figures
    are not."""
    once = [["pair_test", '{"figures": [0.1, 0.2], "level": 0.005}'],
            ["pair_test", '{"figures": [0.1, 0.2, 0.3], "level": 0.005}']]
    assert figures_repeated(once) == []
    assert figures_repeated([*once, once[0]]) == [once[0]]


def test_the_trip_is_drawn_in_the_architecture() -> None:
    """Every file of the trip is named in docs/architecture.md's drawing of it."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## A benchmark's trip", 1)[1].split("\n## ", 1)[0]
    assert [name for name in sorted(TRIP_FILES) if f"`{name}`" not in section] == []


@pytest.mark.slow
def test_a_benchmarks_trip_stays_in_its_files_enters_none_twice_and_computes_once(
        tmp_path: Path) -> None:
    """``pytest --gpu-bench-against=../baseline`` on a user's project (two pairs of
    processes, one look): the benchmark's trip in the user's process enters only the
    files the drawing names, re-enters none from a file it called, and computes each
    figure of a pair verdict (the pair test, its power) once per decision, the looks,
    the progress line, the test's verdict and the run's family included."""
    for side in ("baseline", "candidate"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "pytest.ini").write_text(INI)
        (folder / "test_bench.py").write_text(BENCH)
    candidate = tmp_path / "candidate"
    (candidate / "conftest.py").write_text(TRACER)
    record = tmp_path / "trip.json"
    run = run_pytest(candidate, "--gpu-bench-against=../baseline", "-p", "no:xdist", "-rA",
                     timeout=600, extra_env={"TRIP_RECORD": str(record)})
    assert run.returncode in (0, 1), run.stdout + run.stderr
    # The verdict's line (its status depends on the machine; its pairs do not).
    assert "test_bench.py::test_saxpy [numpy on" in run.stdout, run.stdout
    assert ", 2 pairs" in run.stdout, run.stdout
    traced = json.loads(record.read_text(encoding="utf-8"))
    files, reentered = trip(traced["chains"])
    normalised = {name.replace("\\", "/") for name in files}
    assert normalised - TRIP_FILES == set(), sorted(normalised)
    assert {"bench/run.py", "bench/paired.py", "bench/peers.py", "processes/peers.py",
            "bench/gate/judge.py"} <= normalised, sorted(normalised)
    assert reentered == [], (reentered, [c for c in traced["chains"]
                                         if len(set(c)) < len(c)])
    assert traced["figures"], "no pair verdict was computed"
    assert figures_repeated(traced["figures"]) == [], traced["figures"]
