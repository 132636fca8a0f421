"""The interop matrix is a property of the libraries, not of the random draw.

Two runs of the exchange and lifetime suites with different hypothesis seeds
must give the same cell summaries: every outcome a cell can show is met by
the explicit examples (one per usable dtype and layout) that every run checks.
The runs are in-process (``pytester.runpytest``): the seed and the report are what
differ, and a fresh interpreter per run proves nothing more.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import settings

from pytest_gpucheck import conformance

pytestmark = pytest.mark.slow

SUITE = conformance.__name__ + ".test_interop"


def _summaries(pytester: pytest.Pytester, seed: int) -> dict[str, str]:
    report = pytester.path / f"interop-{seed}.json"
    profile = settings.get_current_profile_name()
    try:
        result = pytester.runpytest(
            "--pyargs", SUITE, "-p", "no:cacheprovider", "-q", "-n0", "--gpu-backends=numpy",
            "-k", "test_exchange or test_lifetime", f"--hypothesis-seed={seed}",
            f"--gpu-report={report}")
    finally:  # a run may load a hypothesis profile in this very process
        settings.load_profile(profile)
    assert result.ret == 0, "\n".join(result.stdout.lines[-60:])
    cells = json.loads(report.read_text(encoding="utf-8"))["sections"]["interop"]["cells"]
    return {f"{c['protocol']}:{c['producer']}->{c['consumer']}": c["summary"] for c in cells}


def test_two_identical_runs_give_the_same_matrix(pytester: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    first, second = _summaries(pytester, 1), _summaries(pytester, 2)
    assert first == second
    assert "refuses" in first["dlpack:numpy->numpy"]  # bfloat16, met by every run
