"""``scripts/measure_accuracy.py``: the parts that decide what its table means, checked
without timing anything.

* The true ratio is the median of per-block ratios of interleaved blocks A B B A: with a
  clock that advances a set amount per call it is that amount's ratio exactly, and a
  call that is slower after the other side's call (an order effect) is charged to
  each side once per block.
* The user project's two checkouts differ only in ``kernels.py``: the baseline commit
  has no extra pass anywhere, the working tree the calibrated passes; the allocating
  kind's extra pass allocates (numpy, seen by tracemalloc) and the arithmetic kind's
  does not.
* The order effects are read from the pairs' blocks as the note reports them.
* The A/A mean is judged over pairs of processes (the independent unit), with the test
  of a session effect beside it, and kept sessions are pooled by ``aa --replay``.
"""

from __future__ import annotations

import json
import mmap
import sys
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from user_runs import REPO, load_script, run_command

from pytest_gpucheck.bench.interleave import SIDES, first_side


@pytest.fixture(scope="module")
def accuracy() -> ModuleType:
    return load_script("measure_accuracy")


class FakeClock:
    """A clock that only the calls advance: ``cost`` per call, and ``after_other`` more
    when the call follows a call of the other function (an order effect)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.last = ""

    def __call__(self) -> float:
        return self.now

    def call(self, name: str, cost: float, after_other: float) -> None:
        self.now += cost + (after_other if self.last and self.last != name else 0.0)
        self.last = name


def test_the_true_ratio_is_the_ratio_of_the_calls_costs(accuracy: ModuleType) -> None:
    clock = FakeClock()
    result = accuracy.true_ratio(lambda: clock.call("a", 1.0, 0.0),
                                 lambda: clock.call("b", 3.0, 0.0), seconds=0.0, clock=clock)
    assert result.median == pytest.approx(3.0)
    assert result.repeats >= 20


def test_the_true_ratio_counts_each_kernels_page_faults_per_call(
        accuracy: ModuleType) -> None:
    """A call that touches 256 fresh pages (1 MiB mapped anew each call) is counted at
    about 256 faults per call, the other at about 0: the table says which regime each
    side of an allocating row timed."""
    clock = FakeClock()

    def fresh_pages() -> None:
        clock.call("b", 2.0, 0.0)
        with mmap.mmap(-1, 1 << 20) as block:
            for offset in range(0, 1 << 20, mmap.PAGESIZE):
                block[offset] = 1

    result = accuracy.true_ratio(lambda: clock.call("a", 1.0, 0.0), fresh_pages,
                                 seconds=0.0, clock=clock)
    assert result.slow_faults == pytest.approx((1 << 20) / mmap.PAGESIZE, rel=0.1)
    assert result.fast_faults < 2


def test_each_side_pays_the_order_cost_once_per_block(accuracy: ModuleType) -> None:
    # Each call costs 0.5 more after the other side's call.  In A B B A each side has
    # exactly one such call per block (B's first, A's second), every block alike: the
    # ratio is (2 + 2 + 0.5) / (1 + 1 + 0.5).  Blocks A A B B would charge B alone
    # ((2.5 + 2) / (1 + 1) = 2.25): the order, not the code, would move the ratio.
    clock = FakeClock()
    result = accuracy.true_ratio(lambda: clock.call("a", 1.0, 0.5),
                                 lambda: clock.call("b", 2.0, 0.5), seconds=0.0, clock=clock)
    assert result.median == pytest.approx(4.5 / 2.5)
    assert result.low == result.high == pytest.approx(4.5 / 2.5)


def test_the_checkouts_differ_only_in_the_slow_passes(accuracy: ModuleType,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {("alloc", "1.1"): 1, ("alloc", "1.5"): 3, ("alloc", "3"): 9,
             ("compute", "1.1"): 2, ("compute", "1.5"): 10, ("compute", "3"): 40}
    monkeypatch.setattr(accuracy, "calibrate", lambda backend, base, project: extra)
    project, base = accuracy.write_project(tmp_path, "numpy", slow=True)
    status = run_command(["git", "status", "--porcelain"], project, timeout=None)
    status.check_returncode()
    changed = status.stdout.split("\n")
    assert [line for line in changed if line] == [" M kernels.py"]
    assert (project / "conftest.py").read_text() == (base / "conftest.py").read_text()
    fast = accuracy.load(base / "kernels.py", "fast_kernels")
    slow = accuracy.load(project / "kernels.py", "slow_kernels")
    assert set(fast.EXTRA.values()) == {0}
    assert extra == slow.EXTRA

    x = np.random.default_rng(0).random(accuracy.SIZE)
    out = np.empty(accuracy.SIZE)

    def peak(module: Any, kind: str) -> int:
        module.run("numpy", kind, "1.1", x, out)
        tracemalloc.start()
        try:
            module.run("numpy", kind, "1.1", x, out)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    size = x.nbytes
    assert peak(slow, "alloc") >= size  # a fresh temporary the size of x
    assert peak(slow, "compute") < size // 8
    assert peak(fast, "alloc") < size // 8  # the fast version of either kind does not


def test_the_order_effects_come_from_the_blocks_the_start_side_and_the_cpu_half(
        accuracy: ModuleType) -> None:
    """Pairs 0 to 3: the baseline starts 0 and 2, is on the first half in 0 and 3; a
    fifth pair (an unfinished cycle) is left out of both contrasts."""
    results = [{"verdict": {"pair_blocks": [[0.1, 0.0, 0.0], [0.3, 0.1, 0.1]],
                            "pair_figures": [0.02, -0.02, 0.04, 0.0, 9.0]}},
               {"verdict": {"pair_figures": [0.02, -0.02]}}]
    first, start, half = accuracy.blocks_effects(results)
    assert first == pytest.approx([0.15])
    assert start == pytest.approx([(0.02 + 0.04) / 2 - (-0.02 + 0.0) / 2])
    assert half == pytest.approx([(0.02 + 0.0) / 2 - (-0.02 + 0.04) / 2])


def test_a_benchmark_id_names_its_kind_and_step(accuracy: ModuleType) -> None:
    assert accuracy.key_of("test_kernels.py::test_kernel[numpy-alloc-1.5]") == ("alloc", "1.5")
    assert accuracy.key_of("test_kernels.py::test_kernel[compute-3-torch-cpu]") == ("compute",
                                                                                     "3")


def test_the_independent_unit_is_the_pair_of_processes(accuracy: ModuleType) -> None:
    """Pairs below the first look's count serve every benchmark of the session: one unit
    each, averaged over the benchmarks it timed; the pairs a benchmark's later looks
    start are retired after it, so each is a unit of its own."""
    results = [{"verdict": {"pair_figures": [0.1, 0.3, 0.5, 0.7]}},
               {"verdict": {"pair_figures": [0.3, 0.1]}},
               {"verdict": {"pair_figures": [0.2, 0.2, -0.4]}}]
    assert accuracy.pair_units(results, replicates=2) == pytest.approx(
        [0.2, 0.2, 0.5, 0.7, -0.4])
    assert [k for k, _ in accuracy.indexed_pair_units(results, replicates=2)] == [0, 1, 2, 3, 2]


def test_the_order_contrasts_over_pairs_read_the_start_side_apart_from_the_cpu_half(
        accuracy: ModuleType) -> None:
    """Pairs the baseline starts (even ones) read 10% higher, nothing else differs: the
    start-side contrast is +10.5% (e^0.1 - 1) with an interval that excludes 0, the
    CPU-half one (crossed with it over every four pairs) about 0."""
    rng = np.random.default_rng(3)
    units = [(k, (0.1 if first_side(k) == SIDES[0] else 0.0) + float(rng.normal(0, 0.01)))
             for k in range(400)]
    line = accuracy.pair_contrasts(units)
    start, half = line.split("; ")
    assert start.startswith("baseline starts minus candidate starts +10.")
    assert "[95% CI +10." in start
    assert abs(float(half.split("half 1 ")[1].split("%")[0])) < 0.5


def test_the_a_a_target_is_read_over_pairs_with_the_session_effect_beside_it(
        accuracy: ModuleType) -> None:
    """Within +-1% only where the interval lies inside; a shift shared by one session's
    pairs shows as a session effect (the pooled interval would be too narrow)."""
    rng = np.random.default_rng(7)
    quiet = [list(rng.normal(0.0, 0.02, 200)) for _ in range(3)]
    assert "interval within +-1%" in accuracy.pooled_pairs(quiet)
    noisy = [list(rng.normal(0.0, 0.2, 40))]
    assert "interval not within +-1%" in accuracy.pooled_pairs(noisy)
    shifted = [list(rng.normal(shift, 0.02, 50)) for shift in (-0.05, 0.0, 0.05)]
    line = accuracy.pooled_pairs(shifted)
    assert "session effect" in line
    assert float(line.rsplit("p=", 1)[1].split()[0]) < 1e-6


def test_the_a_a_sessions_kept_are_pooled_without_running_any(tmp_path: Path) -> None:
    """``aa --replay FOLDER``: the kept JSON reports of two sessions, pooled over their
    pairs, as a user reruns the analysis."""
    kept = tmp_path / "kept"
    kept.mkdir()
    for session, figures in enumerate(([0.01, -0.01, 0.02], [0.0, 0.01, -0.02])):
        report = {"sections": {"benchmarks": {"results": [
            {"verdict": {"status": "unchanged", "pair_figures": figures,
                         "pair_blocks": [[f, f] for f in figures]}}]}}}
        (kept / f"aa-user-numpy-{session}.json").write_text(json.dumps(report))
    run = run_command([sys.executable, str(REPO / "scripts" / "measure_accuracy.py"), "aa",
                       "--backends", "numpy", "--replay", str(kept)], tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kept/aa-user-numpy-0: mean change +0.67% over 1 benchmarks and 3 pairs" \
        in run.stdout
    assert "over pairs of processes (the unit): +0.17%" in run.stdout
    assert "(n=6)" in run.stdout


def test_the_sessions_written_as_evidence_pool_as_the_reports_did(tmp_path: Path) -> None:
    """``aa --replay FOLDER --evidence SMALL``: each session's verdicts, the fields the
    analysis reads only (a report holds every record too: about 90 KB a session), which
    ``--replay SMALL`` pools to the same lines (what docs/aa-evidence/ holds)."""
    kept, small = tmp_path / "kept", tmp_path / "small"
    kept.mkdir()
    for session, figures in enumerate(([0.01, -0.01, 0.02, 0.0], [0.0, 0.01, -0.02, 0.03])):
        report = {"sections": {"benchmarks": {"results": [
            {"record": {"extra": {"rounds": list(range(500))}},
             "verdict": {"status": "unchanged", "pair_figures": figures,
                         "pair_blocks": [[f, f] for f in figures], "pinning": "x" * 200}},
            {"record": {}, "verdict": None}]}}}
        (kept / f"aa-user-numpy-{session}.json").write_text(json.dumps(report))
    script = [sys.executable, str(REPO / "scripts" / "measure_accuracy.py"), "aa",
              "--backends", "numpy", "--replay"]
    first = run_command([*script, str(kept), "--evidence", str(small)], tmp_path,
                        timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    written = sorted(path.name for path in small.iterdir())
    assert written == ["aa-user-numpy-kept.0.json", "aa-user-numpy-kept.1.json"]
    verdict = json.loads((small / written[0]).read_text())["sections"]["benchmarks"][
        "results"][0]["verdict"]
    assert sorted(verdict) == ["pair_blocks", "pair_figures", "status"]
    again = run_command([*script, str(small)], tmp_path, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr

    # The same lines, the sessions' names aside (kept/aa-user-numpy-0, small/...kept.0).
    assert [line.split(": ", 1)[1] for line in again.stdout.splitlines()] == [
        line.split(": ", 1)[1] for line in first.stdout.splitlines()]
    assert "'none': 2" in again.stdout  # the benchmarks without a verdict, counted
    twice = run_command([*script, str(kept), "--evidence", str(small)], tmp_path,
                        timeout=120)
    assert twice.returncode != 0
    assert "exists" in twice.stderr


#: Run in a child with ``NUMBA_NRT_STATS=1`` (numba counts its runtime's allocations
#: only when asked before it is imported): each kernel's result and how many arrays one
#: call allocates.
NRT_COUNT = '''
import json, sys
import numpy as np
from numba.core.runtime import rtsys
sys.path.insert(0, sys.argv[1])
import measure_accuracy as accuracy
import measure_real_client as client
from pathlib import Path
a = np.random.default_rng(0).random(client.SIZE)
a[::client.NAN_EVERY] = np.nan
found = {}
for side in ("base", "project"):
    kernels = accuracy.load(Path(sys.argv[2]) / side / "kernels.py", "kernels_" + side)
    out = np.empty(client.SIZE)
    kernels.move_mean(a, client.WINDOW, 1, out)
    before = rtsys.get_allocation_stats().alloc
    kernels.move_mean(a, client.WINDOW, 1, out)
    found[side] = [rtsys.get_allocation_stats().alloc - before, out.tolist()]
print(json.dumps(found))
'''


def test_the_real_clients_checkouts_differ_by_one_allocating_pass(tmp_path: Path) -> None:
    # scripts/measure_real_client.py: numbagg's move_mean as it ships and a slow twin
    # that allocates an array of the input's size on every call, with the same results;
    # the two checkouts differ in kernels.py only.
    client = load_script("measure_real_client")
    base, project = client.write_checkouts(tmp_path)
    for name in ("test_move.py", "pytest.ini"):
        assert (base / name).read_text() == (project / name).read_text()
    assert (base / "kernels.py").read_text() != (project / "kernels.py").read_text()
    run = run_command([sys.executable, "-c", NRT_COUNT, str(REPO / "scripts"), str(tmp_path)],
                      tmp_path, timeout=300, extra_env={"NUMBA_NRT_STATS": "1"})
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    # The runtime counts what passing the arrays in and out costs on both sides alike;
    # the slow twin allocates one array more per call.
    assert found["project"][0] - found["base"][0] == 1, {k: v[0] for k, v in found.items()}
    np.testing.assert_allclose(found["project"][1], found["base"][1], rtol=1e-9)
    # --identical (an A/A run on the real kernel): the project holds numbagg's kernel too.
    (tmp_path / "identical").mkdir()
    same_base, same_project = client.write_checkouts(tmp_path / "identical", identical=True)
    assert (same_project / "kernels.py").read_text() == (base / "kernels.py").read_text()
    assert (same_base / "kernels.py").read_text() == (base / "kernels.py").read_text()


@pytest.mark.parametrize("backend", ["numpy", "numba-cpu", "torch-cpu"])
def test_the_committed_a_a_evidence_replays(tmp_path: Path, backend: str) -> None:
    """docs/aa-evidence/ stays readable by the command its README prints: every kept
    session of the backend pooled, each pair of processes counted once."""
    folder = REPO / "docs" / "aa-evidence" / "set-up-at-once" / "default"
    files = sorted(folder.glob(f"aa-user-{backend}-*.json"))
    assert files
    accuracy = load_script("measure_accuracy")
    pairs = sum(len(accuracy.pair_units(json.loads(path.read_text())["sections"][
        "benchmarks"]["results"])) for path in files)
    run = run_command([sys.executable, str(REPO / "scripts" / "measure_accuracy.py"), "aa",
                       "--project", "user", "--backends", backend, "--replay", str(folder)],
                      tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    (line,) = [line for line in run.stdout.splitlines() if "(the unit)" in line]
    assert f"(n={pairs})" in line
