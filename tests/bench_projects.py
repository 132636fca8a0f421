"""What the benchmark gate's user scenarios put in their temporary projects' ``pytest.ini``
(tests/bench/test_bench_*.py that run a project in child processes)."""

from __future__ import annotations

import textwrap

#: The line that keeps hypothesis's pytest plugin out of a scenario's runs.  This
#: environment has it installed (the suite's own property tests), so every pytest
#: process of a scenario would load it, and at its terminal summary import all of
#: hypothesis: 0.8 s of CPU of the 1.3 s a trivial run takes.  A gated run starts
#: many such processes (the gate's pairs, the stored gate's fresh processes, isolation
#: workers), and each reads the project's ini.  The projects have no hypothesis tests;
#: pytest accepts the line where the plugin is not installed.
WITHOUT_HYPOTHESIS = "addopts = -p no:hypothesispytest\n"


def with_two_processes(ini: str) -> str:
    """``ini`` (tests/bench/test_bench_plugin.py's ``INI``: 3 fresh processes a side for the
    stored gate) with 2, the fewest the stored gate compares.

    Its kernel spins for a set time of the process's CPU clock, the clock that times
    NumPy, so a loaded machine barely moves a process's figure (1.5% between processes
    at load 20 on a 2-core machine: the call's own overhead).  At two processes a side,
    a two-sided 0.005 (a family of two benchmarks at 0.01) and 2 degrees of freedom
    (t = 14.1), a planted slowdown of ``BENCH_SCALE=5`` (+1.61 in logs) is missed
    (noncentral t; scipy.stats.nct) with 5.8e-7 at an SD of 3% between processes and
    5.7e-3 at 5%; a 2x one (+0.69) was missed with 6.9% at 3%.  Five times is below the
    tolerant benchmark's floor (``min_effect=5``, +500%), which its estimate passes only
    with an error of +0.18 in logs (6 SDs at 3%)."""
    assert "gpu_bench_processes = 3\n" in ini
    return ini.replace("gpu_bench_processes = 3\n", "gpu_bench_processes = 2\n")


def gate_ini(**settings: object) -> str:
    """A scenario's ``pytest.ini``: NumPy's items, these ini keys in this order
    (``gpu_bench_rounds=10`` is the line ``gpu_bench_rounds = 10``), and
    :data:`WITHOUT_HYPOTHESIS`."""
    keys = "".join(f"{key} = {value}\n" for key, value in settings.items())
    return f"[pytest]\ngpu_backends = numpy\n{keys}{WITHOUT_HYPOTHESIS}"


#: The smallest gate a run can have (2 pairs of 10 rounds, a 1 s budget): for tests of what
#: the gate says and refuses, not of its power.
SMALL_GATE_INI = gate_ini(gpu_bench_rounds=10, gpu_bench_max_rounds=10,
                          gpu_bench_replicates=2, gpu_bench_budget=1)

#: One benchmark of a small saxpy, for the projects of those tests.
SAXPY_BENCH = textwrap.dedent("""\
    import numpy as np


    def test_saxpy(gpu_benchmark):
        x = np.ones(1 << 12, np.float32)
        gpu_benchmark(lambda: 2.5 * x + x)
    """)
