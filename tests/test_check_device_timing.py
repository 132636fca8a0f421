"""scripts/check_device_timing.py: the GPU tier's check that device times hold no dispatch.

Its verdicts need a GPU (never here); on the CPU tier ``--dry-run`` runs the same path,
the fixture in a pytest session of its own and the reference timing, and gives none.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_device_timing.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_device_timing", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_verdicts_hold_the_tolerances(monkeypatch: pytest.MonkeyPatch) -> None:
    check = load()
    monkeypatch.delenv("GPUCHECK_TIMING_DRY_RUN", raising=False)
    assert check.verdict(1.09, 0.10) == "PASS (within 10%)"
    assert check.verdict(0.91, 0.10) == "PASS (within 10%)"
    # numba-cuda's copy as the H200 read it (244 us against CuPy's 70 us) fails.
    assert check.verdict(244 / 70, 0.10) == "FAIL (within 10%)"
    assert check.verdict(1.031, 0.03) == "FAIL (within 3%)"
    assert check.figure({"median": 70e-6, "launch_overhead": 174e-6,
                         "dispatch_bound": True}) == (
        "70.0 us (launch overhead 174.0 us/call, DISPATCH-BOUND: the device time is at most this)")


@pytest.mark.slow
def test_a_dry_run_prints_both_comparisons_without_a_verdict() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run"], capture_output=True,
                          text=True, check=False, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.split("== device timing\n")[-1].splitlines()
    assert lines[0].startswith("copy of 16777216 B (read + written): numpy "), lines
    assert "numba-cpu / numpy = " in lines[0], lines
    assert lines[1].startswith("numpy saxpy of 524288 float32: gpu_benchmark median "), lines
    assert all(line.endswith("dry run (CPU tier): no verdict") for line in lines), lines
