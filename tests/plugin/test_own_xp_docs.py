"""docs/getting-started.md's "Keep your own `xp`": a project with its own ``xp`` uses the
GPU pieces alone (``gpu_device``, the JAX memory setting, ``--gpu-require``), as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"


def _blocks() -> tuple[str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Keep your own `xp`"):text.index("## In CI")]
    conftest, test = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return conftest, test


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytest.importorskip("array_api_compat")
    pytest.importorskip("torch")
    for name in ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION",
                 "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv(name, raising=False)  # the conftest sets it; put back after
    conftest, test = _blocks()
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_ones=test)
    return pytester


def test_the_projects_own_xp_runs_with_the_gpu_pieces(project: pytest.Pytester) -> None:
    result = project.runpytest("-v")
    result.stdout.fnmatch_lines(["*test_ones?numpy? PASSED*", "*test_ones?torch? PASSED*"])
    result.assert_outcomes(passed=2)
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    # gpu_device is a fixture of ours: the run used the plugin, so no "changes nothing".
    result.stdout.no_fnmatch_line("*changes nothing in this run*")


def test_gpu_require_guards_the_projects_own_checks(project: pytest.Pytester) -> None:
    from pytest_gpucheck.backends.devices import cuda_driver

    driver = cuda_driver()
    if driver.available:
        pytest.skip("a CUDA driver is here: --gpu-require=gpu would pass")
    result = project.runpytest("--gpu-require=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --gpu-require=gpu: {driver.reason}"])


def test_this_process_device_follows_the_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_gpucheck import this_process_device

    for name in ("PYTEST_GPUCHECK_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                 "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                 "SLURM_LOCALID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    chosen = this_process_device()
    assert "gw3" in chosen.how or "xdist" in chosen.how
