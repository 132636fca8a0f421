"""The conformance matrix in the terminal and in --gpu-report files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from user_runs import run_pytest

from pytest_gpucheck.reporting.atomic_files import write_atomically

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


def test_terminal_matrix_counts_each_backend_and_family(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("torch")
    for name in ("CI", "BUILD_NUMBER"):  # pytest would show its messages whole
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")  # pytest cuts its summary's messages to it
    pytester.makepyfile(test_things=TESTS)
    result = pytester.runpytest("--gpu-backends=numpy,torch-cpu")
    lines = result.stdout.lines
    start = lines.index(next(line for line in lines if "gpucheck conformance matrix" in line))
    table = lines[start + 1 : start + 4]
    assert table[0].split() == ["family", "numpy", "torch-cpu"]
    assert table[1].split() == ["kernels", "pass", "1", "fail", "1/1"]
    assert table[2].split() == ["things", "pass", "1", "pass", "1"]
    result.stdout.fnmatch_lines([
        "legend: pass N: N items passed | fail F/N:*",
        "gpucheck: the command that reruns each failure with its backend and options:",
        # pytest's summary line cuts this message to 80 columns: the reason is given here
        # (wrapped, as every line of ours, to the terminal's width).
        "FAIL test_things.py::test_bad[[]torch-cpu[]]: AssertionError: assert 'torch-cpu' !=",
        "    'torch-cpu'",
        "  rerun: pytest 'test_things.py::test_bad[[]torch-cpu[]]' --gpu-backends=torch-cpu",
        "gpucheck: 1 fail, 3 pass (items in the matrix's cells; pytest's line below",
        "    counts every test)",
        "*short test summary info*",
        "FAILED test_things.py::test_bad[[]torch-cpu[]] - AssertionError: assert 'torch-cp...",
    ])


@pytest.mark.slow
def test_the_matrix_fits_the_terminal_and_names_each_reason_once(
        pytester: pytest.Pytester) -> None:
    # It names torch-cpu and jax-cpu: without them (the core alone) it skips.
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    from pytest_gpucheck.backends.devices import cuda_driver

    if cuda_driver().available:
        pytest.skip("the GPU backends run here: no shared skip reason to group")
    pytester.makepyfile(test_things=TESTS)
    result = run_pytest(pytester.path, "--gpu-backends=numpy,torch-cpu,jax-cpu,gpu",
                        timeout=600,
                        # How pytest's terminal writer learns the width.
                        extra_env={"COLUMNS": "80"})
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "gpucheck conformance matrix" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("gpucheck: the command"))
    block = lines[start + 1:end]
    too_wide = [line for line in block if len(line) > 80]
    assert not too_wide, "\n".join(block)
    # The five GPU backends could not run here: their columns (all "skip") are folded into
    # one line with the reasons (the layout changed: eight backends were two tables), so
    # the three that ran fit one table.
    assert sum(line.startswith("family ") for line in block) == 1, "\n".join(block)
    header = next(line for line in block if line.startswith("family "))
    assert header.split() == ["family", "numpy", "jax-cpu", "torch-cpu"], header
    # Four GPU backends share "no NVIDIA driver": the folded line names them once, together.
    # CuPy's reason is its own where it is not installed; a CUDA build of CuPy installed
    # without a device (a contributor's environment, or CI's after the suite) skips for the
    # driver's reason too, and is then named in the same folded line.
    text = " ".join(line.strip() for line in block)
    assert text.count("no NVIDIA driver") == 1, text
    from pytest_gpucheck.backends import get_backend

    cupy_reason = get_backend("cupy").probe().reason  # no import of cupy without a driver
    if cupy_reason.startswith("no NVIDIA driver found"):
        assert ("skip in every family (columns left out): numba-cuda, cupy, jax-gpu, "
                "cuda-python, torch-cuda: no NVIDIA driver found") in text, text
    else:
        assert ("skip in every family (columns left out): numba-cuda, jax-gpu, cuda-python, "
                "torch-cuda: no NVIDIA driver found") in text, text
        assert "cupy: " in text, text


@pytest.mark.slow
def test_json_and_markdown_reports(pytester: pytest.Pytester) -> None:
    # The failing cell is torch-cpu's: without it (the core alone) it skips.
    pytest.importorskip("torch")
    pytester.makepyfile(test_things=TESTS)
    pytester.runpytest("--gpu-backends=numpy,torch-cpu,gpu", "--gpu-report=out/report.json")
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert data["format"] == "pytest-gpucheck/report/v2"
    cells = {(c["family"], c["backend"]): c for c in data["cells"]}
    assert cells[("kernels", "torch-cpu")]["status"] == "fail"
    assert cells[("kernels", "torch-cpu")]["summary"] == "fail 1/1"
    assert cells[("kernels", "numpy")]["pass"] == 1
    cupy_reason = data["backends"]["cupy"]["reason"]
    if cupy_reason:  # no usable cupy here
        assert cells[("things", "cupy")]["status"] == "skip"
        assert cells[("things", "cupy")]["skip_reasons"] == {cupy_reason: 1}
    assert data["backends"]["numpy"]["device"] == "cpu"
    # Totals over the matrix, the failures with what reruns them, and the run's facts.
    assert data["totals"]["fail"] == 1
    assert data["totals"]["pass"] == 3
    statuses = ("pass", "fail", "skip", "n/a")
    assert data["totals"]["items"] == sum(data["totals"][s] for s in statuses)
    (failure,) = data["failures"]
    assert failure["nodeid"] == "test_things.py::test_bad[torch-cpu]"
    assert failure["reason"].startswith("AssertionError: assert 'torch-cpu' != 'torch-cpu'")
    assert failure["rerun"] == (
        "pytest 'test_things.py::test_bad[torch-cpu]' --gpu-backends=torch-cpu")
    assert failure["file"].endswith("test_things.py")
    written = (pytester.path / "test_things.py").read_text().splitlines()
    assert written[failure["line"] - 1].startswith("@pytest.mark.gpu_family")  # the test
    assert data["run"]["timestamp"].endswith("+00:00")
    assert set(data["run"]["versions"]) >= {"python", "pytest", "pytest-gpucheck"}
    assert "commit" in data["run"]
    assert data["legend"].startswith("pass N")

    pytester.runpytest("--gpu-backends=numpy,torch-cpu", "--gpu-report=summary.md")
    markdown = (pytester.path / "summary.md").read_text()
    assert "| family | numpy | torch-cpu |" in markdown
    assert "| kernels | ✅ pass 1 | ❌ fail 1/1 |" in markdown
    assert "- ❌ `test_things.py::test_bad[torch-cpu]`: AssertionError: assert" in markdown
    assert "  rerun: `pytest 'test_things.py::test_bad[torch-cpu]' --gpu-backends=torch-cpu`" \
        in markdown
    assert "Legend: pass N" in markdown
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


def test_expected_failures_count_as_skips_with_a_one_line_reason(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_xf="""
        import pytest

        @pytest.mark.xfail(reason="known bug 12", strict=True)
        def test_known(gpu_backend):
            raise AssertionError("a long message\\nover two lines")
    """)
    result = pytester.runpytest("--gpu-backends=numpy", "--gpu-report=r.json")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["  numpy xfail (known bug 12)"])
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert cell["skip_reasons"] == {"xfail (known bug 12)": 1}


SHORT_FAILURE = """
def test_short(gpu_backend):
    assert gpu_backend.name == "cupy", "wrong backend"
"""


def test_a_reason_pytest_shows_whole_is_not_repeated(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest's short summary shows ``AssertionError: wrong backend`` whole: the plugin
    adds the rerun command alone.  The twin: with ``-rN`` pytest prints no summary, and
    the same failure gets its ``FAIL`` line with the reason."""
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    pytester.makepyfile(test_short=SHORT_FAILURE)
    result = pytester.runpytest("--gpu-backends=numpy", "-n0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "gpucheck: the command that reruns each failure with its backend and options:",
        "  rerun: pytest 'test_short.py::test_short[[]numpy[]]' --gpu-backends=numpy",
        "*short test summary info*",
        "FAILED test_short.py::test_short[[]numpy[]] - AssertionError: wrong backend*"])
    assert not [line for line in result.stdout.lines if line.startswith("FAIL ")]
    quiet = pytester.runpytest("--gpu-backends=numpy", "-n0", "-rN")
    quiet.assert_outcomes(failed=1)
    assert [line for line in quiet.stdout.lines if line.startswith("FAIL ")] == [
        "FAIL test_short.py::test_short[numpy]: AssertionError: wrong backend"]


def test_a_message_that_starts_on_a_new_line_gives_its_first_line(
        pytester: pytest.Pytester) -> None:
    """numpy.testing's messages start with a newline: the FAIL line names the message's
    first line, not a bare ``AssertionError:``."""
    pytester.makepyfile(test_mine="""
        import numpy as np

        def test_bug(gpu_backend):
            np.testing.assert_array_equal(np.array([1, 2, 3]), np.array([1, 2, 4]))
    """)
    result = pytester.runpytest("--gpu-backends=numpy", "-n0")
    result.assert_outcomes(failed=1)
    assert [line for line in result.stdout.lines if line.startswith("FAIL ")] == [
        "FAIL test_mine.py::test_bug[numpy]: AssertionError: Arrays are not equal"]
