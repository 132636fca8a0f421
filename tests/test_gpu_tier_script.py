"""``scripts/run_gpu_tier.sh``: what it records and the one-run matrix in two formats.

The script itself needs a GPU to be useful; what can be checked without one
is checked here: the package filter keeps every CUDA-build distribution (their
names carry suffixes), and its report plugin writes ``matrix.md`` from the very
run that writes ``matrix.json``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _relevant_pattern() -> str:
    text = (SCRIPTS / "run_gpu_tier.sh").read_text()
    match = re.search(r"^relevant='(.+)'$", text, re.MULTILINE)
    assert match, "run_gpu_tier.sh no longer defines relevant='...'"
    return match.group(1)


FREEZE = """\
cupy-cuda13x==14.2.0
cuda-bindings==13.5.0
cuda-core==1.2.2
jax==0.10.2
jax-cuda13-pjrt==0.10.2
jax-cuda13-plugin==0.10.2
jaxlib==0.10.2
numba-cuda==0.30.4
nvidia-cublas==13.1.0.3
nvidia-cuda-nvrtc==13.5.37
torch==2.14.0
mpi4py==4.1.2
requests==2.32.3
packaging==25.0
"""


def test_the_environment_records_every_cuda_build_distribution() -> None:
    done = subprocess.run(["grep", "-iE", _relevant_pattern()], input=FREEZE, text=True,
                          capture_output=True, check=False)
    kept = done.stdout.splitlines()
    assert kept == FREEZE.splitlines()[:-2], kept


TEST_FILE = """
import numpy as np


def test_scale(gpu_backend, xp):
    x = gpu_backend.to_device(np.arange(4.0))
    np.testing.assert_array_equal(gpu_backend.to_host(xp.multiply(x, 2)), np.arange(4.0) * 2)
"""


def test_one_run_writes_matrix_json_and_its_markdown_twin(pytester: pytest.Pytester,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_scale=TEST_FILE)
    monkeypatch.setenv("PYTHONPATH", str(SCRIPTS))
    args = ["-p", "no:cacheprovider", "--gpu-backends=numpy,numba-cpu"]
    result = pytester.runpytest_subprocess(*args, "-p", "gpu_tier_report",
                                           "--gpu-report=run/matrix.json")
    result.assert_outcomes(passed=2)
    data = json.loads((pytester.path / "run" / "matrix.json").read_text())
    assert data
    markdown = (pytester.path / "run" / "matrix.md").read_text()
    # The same matrix as a run asking for Markdown directly (this test is deterministic).
    pytester.runpytest_subprocess(*args, "--gpu-report=direct.md").assert_outcomes(passed=2)
    # Apart from when each run happened, which the report states to the second.
    def undated(text: str) -> str:
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-]\d\d:\d\d", "TIME", text)

    assert undated(markdown) == undated((pytester.path / "direct.md").read_text())
    assert undated(markdown) != markdown  # the timestamp is there, and was masked
    assert "numpy" in markdown
    assert "numba-cpu" in markdown
