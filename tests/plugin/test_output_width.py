"""What a user's terminal shows fits it: the run at 80 columns (``COLUMNS=80``, how
pytest's terminal writer learns the width when it is not a tty) prints no line wider,
and the main job prints no framework's warnings.

Each check runs the user's command in a subprocess: a project with a benchmark of its
own, and a cheap subset of the main job (``pytest conformance --gpu-backends=all``)
from the checkout's root, as CI runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from user_runs import run_pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in what is checked here.
LEAN = ("-p", "no:hypothesispytest")
BENCHMARK = """
import numpy as np

def test_add(gpu_benchmark):
    a = np.ones(1 << 16, dtype=np.float32)
    b, out = a.copy(), np.empty_like(a)
    gpu_benchmark.pedantic(np.add, args=(a, b), kwargs={"out": out},
                           bytes=3 * a.nbytes, flops=a.size, rounds=5)
"""


def test_the_benchmark_summary_fits_80_columns(tmp_path: Path) -> None:
    # Its figures were one line of about 150 columns (180 on a GPU, with the device's
    # name), which the terminal wrapped under the next line's columns.
    (tmp_path / "test_rates.py").write_text(BENCHMARK, encoding="utf-8")
    result = run_pytest(tmp_path, *LEAN, "-q", timeout=900, extra_env={"COLUMNS": "80"})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if " gpucheck benchmarks " in line)
    # To a blank line or pytest's last line: the plugin's summary now comes after
    # pytest-benchmark's table (the run ends with the plugin's lines).
    end = next((i for i in range(start + 1, len(lines))
                if not lines[i] or lines[i].startswith(("=", "1 passed"))), len(lines))
    block = lines[start:end]
    assert all(len(line) <= 80 for line in block), "\n".join(block)
    text = " ".join(line.strip() for line in block)
    assert "test_rates.py::test_add [numpy on " in text, text
    assert "GB/s copy ceiling), " in text, text
    assert " GFLOP/s, first call " in text, text
    # pytest-benchmark's own table comes before it, as wide as its columns (not this
    # plugin's).


@pytest.fixture(scope="module")
def main_job_subset() -> str:
    """``pytest conformance`` on the CPU backends of four frameworks, a few suites."""
    for framework in ("numba", "jax", "torch"):
        pytest.importorskip(framework)
    # -n0: from the checkout's root the run takes the project's addopts; what is checked
    # is the width of the lines, not xdist.
    result = run_pytest(REPO, "conformance", "--gpu-backends=numpy,numba-cpu,jax-cpu,torch-cpu",
                        "-q", "-n0", "-k", "test_vector_add or test_fused", timeout=1200,
                        extra_env={"COLUMNS": "80"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return out


def test_the_main_job_fits_80_columns(main_job_subset: str) -> None:
    # Before: the totals line (94), the n/a reasons, the MPI and interop lines did not.
    too_wide = [line for line in main_job_subset.splitlines() if len(line) > 80]
    assert not too_wide, main_job_subset
    assert "gpucheck: 4 pass, 12 n/a (items in the matrix's cells; pytest's line below\n" \
           "    counts every test)" in main_job_subset, main_job_subset


def test_the_main_job_prints_no_framework_warnings(main_job_subset: str) -> None:
    assert "warnings summary" not in main_job_subset, main_job_subset
    assert "warning" not in main_job_subset.splitlines()[-1], main_job_subset
