"""A slowdown that is an extra allocation is sized as users would measure it (issue 43).

Both sides of the gate used to run with glibc's mmap threshold fixed, so every host
array of 128 KiB or more was a fresh mapping faulting in on every call: a 1.5-1.7x
slowdown of numbagg's ``move_mean`` whose slow version allocates read +153% to +209%.
Here a user project (a git repository with a real ``conftest.py``, the baseline a
``git worktree`` of its fast commit) slows a NumPy kernel by extra passes that each
allocate a 2 MiB temporary, and runs ``python -m pytest --gpu-bench-against=../base``
in a subprocess.  The true ratio is measured in this process, both checkouts'
``kernels.py`` side by side, by interleaved timeit (blocks A B B A,
``scripts/measure_accuracy.py``); the gate's ratio (1 + its change) must be within 20%
of it.

False-fail chance by design: about 0.5%.  scripts/measure_accuracy.py measured, for
this kernel on this 2-core machine at load 6 to 14, a between-pair SD of 8.5% and the
gate reading allocating slowdowns 11% to 14% above the true ratio (docs/
benchmark-accuracy.md); with the default 10 pairs the mean's standard error is 2.7%, so
the 20% bound is about 2.5 standard errors beyond the reading expected (one-sided
0.6%); the true ratio's own interval is about +-1%.  The old fixed threshold read this
kernel 2-3x too high and fails it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from user_runs import load_script, run_pytest

#: Nine extra allocating passes over 30: about 2.2x at load 6 to 14, 1.43x at rest (the
#: table's "alloc 3" row).
EXTRA = {("alloc", "3"): 9}
NODE = "test_kernels.py::test_kernel[numpy-alloc-3]"


def script() -> ModuleType:
    return load_script("measure_accuracy", "measure_accuracy_for_size")


@pytest.mark.slow
def test_an_allocating_slowdown_is_sized_within_20_percent(tmp_path: Path) -> None:
    accuracy = script()
    project, base = accuracy.write_project(tmp_path, "numpy", slow=False)
    (project / "kernels.py").write_text(accuracy.kernels_source(EXTRA))
    fast = accuracy.load(base / "kernels.py", "size_fast_kernels")
    slow = accuracy.load(project / "kernels.py", "size_slow_kernels")
    x = np.random.default_rng(0).random(accuracy.SIZE)
    outs = (np.empty(accuracy.SIZE), np.empty(accuracy.SIZE))
    true = accuracy.true_ratio(lambda: fast.run("numpy", "alloc", "3", x, outs[0]),
                               lambda: slow.run("numpy", "alloc", "3", x, outs[1]),
                               seconds=5.0, clock=time.process_time)
    # The slowdown is there, in this process.  Its size moves with the machine's load
    # (allocation costs more on a busy machine): about 2.2x at load 6 to 14, 1.43x at rest;
    # the check is the gate's reading against whatever it is now.
    assert true.median > 1.25, true

    report = tmp_path / "report.json"
    run = run_pytest(project, NODE, "-q", "--gpu-bench-against=../base",
                     f"--gpu-report={report}", timeout=600)
    output = run.stdout + run.stderr
    results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
    assert len(results) == 1, output
    verdict = results[0]["verdict"]
    assert verdict["status"] == "regression", output
    ratio = (1 + verdict["change"]) / true.median
    assert 0.8 <= ratio <= 1.2, (f"gate {verdict['change']:+.1%} against a true ratio "
                                 f"{true.median:.3f}: {ratio:.3f} of it\n{output}")
    assert run.returncode == 1, output  # a regression fails the run, as it should
    sys.modules.pop("measure_accuracy_for_size", None)
