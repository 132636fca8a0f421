"""A ``--gpu-bench-against`` run ends within the bound docs/benchmarks.md states: the
budget per benchmark times the benchmarks, plus what the run costs without the gate
(issue 43: "the budget bounds what it says, process start-up counted").

The project's benchmark is identical code on both sides whose processes each run at
their own speed (a share drawn from the process id), so the pairs disagree by far more
than the gate can call unchanged: every benchmark is undecided after its first look
and the gate wants all five looks; only the budget stops it.  The run is the user's
command in a subprocess.

The budget is 25 s, more than the first look takes here (it always runs, and on the
first benchmark it includes starting the pairs: about 20 s at load 26 on this 2-core
machine, when pytest itself took about 20 s to start; with an 8 s budget that first
look alone put the run 16 s over the bound below).

False-fail chance: at most 1e-4 that the gate decides a benchmark of identical code (the
family level the run is given: a REGRESSION or IMPROVEMENT of it is a false alarm; an
equivalence call needs the interval within +-5%, which pairs 15% apart cannot give at 10
pairs).  The wall bound's is not a designed probability.  The bound allows, beyond
``benchmarks x budget``, the wall time of the same run without the gate (pytest's own
start-up and the in-process rounds, timed just before) and 20 s for the pairs to end.
The projection takes the slowest start-up per pair seen in the run, so the bound is
exceeded only where the first look takes longer than the budget, or a later look's
pairs start or run more than 20 s slower than every earlier pair did.
"""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import pytest
from bench_projects import gate_ini
from user_runs import run_pytest

BUDGET = 25.0
BENCHMARKS = 2
#: The run's false-alarm level (the gate's default is 0.01): no decision on identical code.
FAMILY_LEVEL = 1e-4
#: For the pairs to end after the last benchmark (and pytest to exit).
ENDING = 20.0

INI = gate_ini(gpu_bench_rounds=8, gpu_bench_replicates=2, gpu_bench_budget=f"{BUDGET:g}")

NOISY = textwrap.dedent(f"""\
    import os

    import numpy as np
    import pytest

    # Each process its own speed, 1x to 1.6x, drawn independently (not from the process
    # id: consecutive ids gave the two sides of every pair speeds a fixed step apart, a
    # real difference the gate rightly called): the pairs of identical code disagree by
    # about 15%, so no look of up to 10 pairs can call the benchmark unchanged.
    SPEED = 1.0 + 0.6 * int.from_bytes(os.urandom(2), "little") / 65536


    @pytest.mark.parametrize("case", range({BENCHMARKS}))
    def test_spin(gpu_benchmark, case):
        x = np.ones(1 << 12)
        calls = int(100 * SPEED)

        def spin():
            for _ in range(calls):
                x.sum()

        gpu_benchmark(spin)
    """)


@pytest.mark.slow
def test_a_gated_run_ends_within_budget_times_benchmarks(tmp_path: Path) -> None:
    for side in ("base", "candidate"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "pytest.ini").write_text(INI)
        (tmp_path / side / "test_spin.py").write_text(NOISY)
    started = time.monotonic()
    plain = run_pytest(tmp_path / "candidate", "-q", timeout=300)
    without_gate = time.monotonic() - started
    assert plain.returncode == 0, plain.stdout + plain.stderr

    started = time.monotonic()
    run = run_pytest(tmp_path / "candidate", "-q", "--gpu-bench-against=../base",
                     f"--gpu-bench-family-level={FAMILY_LEVEL:g}", timeout=600)
    wall = time.monotonic() - started
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    bound = without_gate + BENCHMARKS * BUDGET + ENDING
    assert wall <= bound, (f"{wall:.0f} s for {BENCHMARKS} benchmarks at a {BUDGET:g} s "
                           f"budget; bound {bound:.0f} s (without the gate "
                           f"{without_gate:.0f} s)\n{output}")
    # No benchmark was decided: each wanted every look it could get, and the budget or
    # the schedule's last look ended it (a run that decided at its first look would
    # prove nothing about the budget).
    text = " ".join(output.split())
    verdicts = dict(re.findall(r"(test_spin\.py::test_spin\[\d\]) \[[^\]]*\], change [^\]]*\], "
                               r"\d+ pairs? in \d+ looks? \(the last at [\d.]+ of the level; "
                               r"([^)]*)\)", text))
    assert len(verdicts) == BENCHMARKS, output
    assert set(verdicts.values()) <= {"stopped for the budget", "the schedule's last look"}, \
        output
    assert text.count("INCONCLUSIVE test_spin.py::test_spin[") >= BENCHMARKS, output
