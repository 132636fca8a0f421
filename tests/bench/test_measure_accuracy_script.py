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
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from user_runs import load_script, run_command


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
