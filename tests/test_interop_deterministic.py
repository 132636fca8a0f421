"""The interop matrix is a property of the libraries, not of the random draw.

Two runs of the exchange and lifetime suites with different hypothesis seeds
must give the same cell summaries: every outcome a cell can show is met by
the explicit examples (one per usable dtype and layout) that every run checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpucheck import conformance

pytestmark = pytest.mark.slow

SUITE = Path(conformance.__file__).parent / "test_interop.py"


def _summaries(tmp_path: Path, seed: int) -> dict[str, str]:
    report = tmp_path / f"interop-{seed}.json"
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "PYTEST_ADDOPTS")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(SUITE), "-p", "no:cacheprovider", "-q", "-n0",
         "--gpu-backends=numpy", "-k", "test_exchange or test_lifetime",
         f"--hypothesis-seed={seed}", f"--gpu-report={report}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    cells = json.loads(report.read_text(encoding="utf-8"))["sections"]["interop"]["cells"]
    return {f"{c['protocol']}:{c['producer']}->{c['consumer']}": c["summary"] for c in cells}


def test_two_identical_runs_give_the_same_matrix(tmp_path: Path) -> None:
    first, second = _summaries(tmp_path, 1), _summaries(tmp_path, 2)
    assert first == second
    assert "refuses" in first["dlpack:numpy->numpy"]  # bfloat16, met by every run
