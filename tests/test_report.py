"""The conformance matrix in the terminal and in --gpu-report files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_gpucheck.report import write_atomically

TESTS = """
import pytest


def test_ok(gpu_backend):
    pass


@pytest.mark.gpu_family("kernels")
def test_bad(gpu_backend):
    assert gpu_backend.name != "torch-cpu"


def test_not_in_matrix():
    pass
"""


def test_terminal_matrix_counts_each_backend_and_family(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_things=TESTS)
    result = pytester.runpytest("--gpu-backends=numpy,torch-cpu")
    lines = result.stdout.lines
    start = lines.index(next(line for line in lines if "gpucheck conformance matrix" in line))
    table = lines[start + 1 : start + 4]
    assert table[0].split() == ["family", "numpy", "torch-cpu"]
    assert table[1].split() == ["kernels", "ok", "1", "FAIL", "1/1"]
    assert table[2].split() == ["things", "ok", "1", "ok", "1"]


def test_json_and_markdown_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_things=TESTS)
    pytester.runpytest("--gpu-backends=numpy,torch-cpu,gpu", "--gpu-report=out/report.json")
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert data["format"] == "pytest-gpucheck/report/v1"
    cells = {(c["family"], c["backend"]): c for c in data["cells"]}
    assert cells[("kernels", "torch-cpu")]["status"] == "fail"
    assert cells[("kernels", "numpy")]["passed"] == 1
    if data["backends"]["cupy"]["reason"]:  # no usable cupy here
        assert cells[("things", "cupy")]["status"] == "skip"
    assert cells[("things", "cupy")]["skip_reason"] == data["backends"]["cupy"]["reason"]
    assert data["backends"]["numpy"]["device"] == "cpu"

    pytester.runpytest("--gpu-backends=numpy,torch-cpu", "--gpu-report=summary.md")
    markdown = (pytester.path / "summary.md").read_text()
    assert "| family | numpy | torch-cpu |" in markdown
    assert "| kernels | ✅ ok 1 | ❌ FAIL 1/1 |" in markdown
    assert not list(pytester.path.glob(".summary.md.*.tmp")), "temporary file left behind"


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomically(target, 12345)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    write_atomically(target, "new")
    assert target.read_text() == "new"
