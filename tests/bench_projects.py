"""What the benchmark gate's user scenarios put in their temporary projects' ``pytest.ini``
(tests/test_bench_*.py that run a project in child processes)."""

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
    """``ini`` (tests/test_bench_plugin.py's ``INI``: 3 fresh processes a side for the
    stored gate) with 2, the fewest the stored gate compares.

    Its kernel spins for a set time of the process's CPU clock, the clock that times
    NumPy, so a loaded machine barely moves a process's figure.  A 2x slowdown (+0.69 in
    logs) is then a regression at two processes a side: at a two-sided 0.005 (a family
    of two benchmarks at 0.01) and 2 degrees of freedom its interval clears 0 while the
    SD between processes stays under 4.9% (0.69 / 14.1)."""
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
