"""The project's own tests fork no process that has JAX running.

JAX registers an at-fork handler once its backends start, and every fork
after that warns "os.fork() was called ... will likely lead to a deadlock"
(a forked child gets JAX's locks without its threads). In the project's own
run, earlier tests start JAX in the test process; the tests below then used to
fork (a ``multiprocessing`` "fork" context, a ``subprocess`` ``preexec_fn``)
and six such warnings ended the run. They now spawn, or set up the child in
its own first line, and this test runs them after starting JAX, as the whole
suite does, and reads the warnings summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from user_runs import run_pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

FORKERS = [
    "tests/bench/test_bench_baseline.py::test_two_concurrent_savers_lose_nothing",
    "tests/processes/test_verdicts_signals.py::test_a_killed_pytest_takes_its_simulator_child_with_it",
]


def test_no_fork_after_jax_started(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    # A plugin that starts JAX's backends first, as earlier tests of the suite do.
    (tmp_path / "jax_started.py").write_text("import jax\n\njax.devices()\n",
                                              encoding="utf-8")
    # -n0: the project's addopts may start xdist workers; the forks are this process's.
    # Without hypothesis's pytest plugin (no part in forking; it imports all of hypothesis
    # at the terminal summary, about 0.7 s of CPU).
    result = run_pytest(ROOT, "-n0", "-p", "no:hypothesispytest", "-p", "jax_started",
                        *FORKERS, timeout=1200,
                        extra_env={"PYTHONPATH": str(tmp_path), "JAX_PLATFORMS": "cpu"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "2 passed" in out, out
    assert "os.fork() was called" not in out, out
