"""The interop suite end to end: the pair matrix in the terminal and in --gpu-report, and the
simulator's cells measured in its child process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

SUITE = Path(__file__).resolve().parents[2] / "conformance" / "test_interop.py"
FAST_PROFILE = """
from hypothesis import settings

settings.register_profile("interop-fast", max_examples=3, deadline=None, derandomize=True)
settings.load_profile("interop-fast")
"""


def run_suite(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makeconftest(FAST_PROFILE)
    profile = settings.get_current_profile_name()
    try:
        return pytester.runpytest("--pyargs", "pytest_gpucheck.conformance.test_interop", *args)
    finally:  # the conftest loads its profile in this very process
        settings.load_profile(profile)


@pytest.mark.slow
def test_cpu_pairs_fill_the_matrix_in_terminal_and_reports(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    result = run_suite(pytester, "--gpu-backends=numpy,torch-cpu", f"--gpu-report={report}",
                       "-k", "test_exchange and dlpack-")
    # torch ignores the read-only flag (a known upstream defect): numpy->torch-cpu xfails
    result.assert_outcomes(passed=10, xfailed=2)
    result.stdout.fnmatch_lines(["*gpucheck interop pair matrix*", "interop dlpack:",
                                 "*numpy*zero-copy*wrong (known)*"])
    cells = {(c["protocol"], c["producer"], c["consumer"]): c
             for c in json.loads(report.read_text())["sections"]["interop"]["cells"]}
    assert cells[("dlpack", "numpy", "torch-cpu")]["known_defects"] == ["torch-ignores-readonly"]
    assert cells[("dlpack", "torch-cpu", "numpy")]["summary"].startswith("zero-copy")
    assert cells[("dlpack-copy", "torch-cpu", "torch-cpu")]["counts"]["copies"] >= 3


@pytest.mark.slow
def test_markdown_report_has_the_matrix(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.md"
    run_suite(pytester, "--gpu-backends=numpy", f"--gpu-report={report}",
              "-k", "test_exchange and dlpack-numpy")
    text = report.read_text()
    assert "## Interop pair matrix" in text
    assert "| numpy | zero-copy" in text


@pytest.mark.slow
def test_simulator_cells_are_measured_in_its_child_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy of the suite inside the run's rootdir: the child is handed node ids
    # relative to it (with --pyargs from elsewhere they would have no path).  The
    # child starts in that directory, so it needs the repository on its path.
    pytester.makepyfile(test_interop=SUITE.read_text(encoding="utf-8"))
    monkeypatch.setenv("PYTHONPATH", str(SUITE.parent.parent))
    pytester.makeconftest(FAST_PROFILE)
    profile = settings.get_current_profile_name()
    try:
        result = pytester.runpytest("test_interop.py", "--gpu-backends=numba-cudasim", "-rs",
                                    "-k", "test_exchange or test_dlpack_export")
    finally:
        settings.load_profile(profile)
    # The export check ran in the child: FakeCUDAArray forwards __dlpack__ to NumPy.
    result.assert_outcomes(passed=1, skipped=4)
    for line in ("*numba.cuda has no from_dlpack*",
                 "*numba-cudasim arrays have no __cuda_array_interface__*",
                 "*numba-cudasim: ok, device (1, 0), versioned*"):
        result.stdout.fnmatch_lines([line])
