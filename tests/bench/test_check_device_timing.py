"""scripts/check_device_timing.py: the GPU tier's check that device times hold no dispatch.

Its verdicts need a GPU (never here); on the CPU tier ``--dry-run`` runs the same path,
the fixture in a pytest session of its own and the reference timing, and gives none.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from user_runs import REPO, load_script, run_command

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_device_timing.py"


def load() -> ModuleType:
    return load_script("check_device_timing")


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
    done = run_command([sys.executable, str(SCRIPT), "--dry-run"], REPO, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.split("== device timing\n")[-1].splitlines()
    assert lines[0].startswith("copy of 16777216 B (read + written): numpy "), lines
    assert "numba-cpu / numpy = " in lines[0], lines
    assert lines[1].startswith("numpy saxpy of 524288 float32: gpu_benchmark median "), lines
    assert all(line.endswith("dry run (CPU tier): no verdict") for line in lines), lines


# -- the verdicts on records the fixture makes on a simulated GPU (fake CUDA events) ---
US = 1e-6
MIB128_COPY = 2 * 4 * (1 << 25)


def copy_record(backend: str, dispatch: float, work: float) -> dict[str, Any]:
    """The fixture's record of the copy on a fake device whose events bill the host's
    dispatch (tests/bench/test_bench_dispatch.py): ``dispatch`` per call, then ``work``."""
    from test_bench_dispatch import FakeDevice, FakeEventTimer, measure

    device = FakeDevice(dispatch, work)
    record = measure(FakeEventTimer(device), device).as_dict()
    record.update(name=f"bench.py::test_copy[{backend}]", bytes=MIB128_COPY)
    return record


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             numba_dispatch: float, numba_work: float) -> tuple[int, str]:
    """The check's main() on GPU-run records: CuPy's copy device-bound (10 us of dispatch
    for 70 us of work, the H200's 48 MiB figure), numba-cuda's as given, and a CuPy
    kernel the reference times alike."""
    check = load()
    monkeypatch.delenv("GPUCHECK_TIMING_DRY_RUN", raising=False)
    monkeypatch.setattr(sys, "argv", ["check_device_timing.py"])
    kernel = copy_record("cupy", 10 * US, 1000 * US)
    records = {"test_copy[cupy]": copy_record("cupy", 10 * US, 70 * US),
               "test_copy[numba-cuda]": copy_record("numba-cuda", numba_dispatch, numba_work),
               "test_kernel[cupy]": kernel}
    monkeypatch.setattr(check, "run_fixture", lambda work: records)
    monkeypatch.setattr(check, "reference_times", lambda n: (
        kernel["median"], 12 * US, "cupyx.profiler.benchmark"))
    status = check.main()
    return status, capsys.readouterr().out.split("== device timing\n")[-1]


def test_a_dispatch_bound_copy_is_a_finding_not_a_failed_tier(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The H200's numba-cuda copy: 174 us of dispatch per call for 70 us of device work.
    The fixture names it dispatch-bound; the check prints that as a finding, with the
    dispatch and the bound, and exits 0 (the old check compared 174 us with CuPy's 70 us
    and failed the tier: exit 1)."""
    status, out = run_main(monkeypatch, capsys, 174 * US, 70 * US)
    copy_line, kernel_line = out.splitlines()[:2]
    assert status == 0, out
    assert "FINDING: numba-cuda's copy is dispatch-bound (174.0 us of host dispatch per " \
           "call against 174." in copy_line, copy_line
    assert "its device time is at most 174." in copy_line, copy_line
    assert copy_line.endswith("not compared (no verdict: no event pair excludes that "
                              "dispatch)"), copy_line
    assert kernel_line.endswith("PASS (within 3%)"), kernel_line


def test_a_device_bound_copy_is_still_judged(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The twins: a device-bound numba-cuda copy as fast as CuPy's passes; one twice as
    slow on the device (its dispatch well below its work) fails the check, exit 1."""
    status, out = run_main(monkeypatch, capsys, 40 * US, 72 * US)
    assert status == 0, out
    assert out.splitlines()[0].endswith("PASS (within 10%)"), out
    status, out = run_main(monkeypatch, capsys, 40 * US, 140 * US)
    assert status == 1, out
    assert out.splitlines()[0].endswith("FAIL (within 10%)"), out
    assert "FINDING" not in out
