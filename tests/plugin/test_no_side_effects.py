"""Selecting backends changes nothing for tests that do not use them, and what cannot be
scoped (JAX reads its allocator settings once per process) is said in one line."""

from __future__ import annotations

import pytest

PLAIN = "def test_plain():\n    assert True\n"


def test_a_run_without_our_fixtures_says_so_once(pytester: pytest.Pytester) -> None:
    """Said where the user selected backends, which then select nothing; not under -q,
    and not in a run that names no option of the plugin's (a project that does not use
    it): that run gets the one header line and nothing else of ours."""
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest("--gpu-backends=numpy")
    result.assert_outcomes(passed=1)
    lines = [line for line in result.stdout.lines if "changes nothing" in line]
    assert lines == ["gpucheck: no collected test uses gpu_backend, xp, gpu_device or the "
                     "bundled suites: --gpu-backends (numpy) changes nothing in this run"]
    quiet = pytester.runpytest("--gpu-backends=numpy", "-q")
    quiet.assert_outcomes(passed=1)
    assert not [line for line in quiet.stdout.lines if "gpucheck" in line], quiet.stdout.str()
    plain = pytester.runpytest()
    plain.assert_outcomes(passed=1)
    # pytest's own "plugins:" line names every plugin it loaded, this one too.
    ours = [line for line in plain.stdout.lines
            if "gpucheck" in line and not line.startswith("plugins: ")]
    assert ours == ["gpucheck: backends numpy (default; more with --gpu-backends=all)"]


def test_getting_started_shows_the_header_of_a_project_that_does_not_use_it() -> None:
    """The one line docs/getting-started.md prints for such a project is the plugin's."""
    from pathlib import Path

    from pytest_gpucheck.plugin import DEFAULT_HEADER

    document = (Path(__file__).parents[2] / "docs" / "getting-started.md").read_text(
        encoding="utf-8")
    section = document.split("## In a project that does not use it", 1)[1].split("\n## ")[0]
    assert f"\n{DEFAULT_HEADER}\n" in section
    assert len(DEFAULT_HEADER) <= 80  # one line in pytest's default 80 columns


def test_a_run_with_our_fixtures_does_not(pytester: pytest.Pytester) -> None:
    """The twin: one test on gpu_backend among plain ones, and the line is gone."""
    pytester.makepyfile(test_plain=PLAIN + "\n\ndef test_ours(gpu_backend):\n    pass\n")
    result = pytester.runpytest("--gpu-backends=numpy")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*changes nothing in this run*")


def test_fixtures_names_a_projects_own_xp(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(params=["numpy"])
        def xp(request):
            return __import__(request.param)
        """
    )
    pytester.makepyfile(test_own=PLAIN)
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines([
        "gpucheck: the xp fixture of conftest.py:3 overrides gpucheck's xp for the tests "
        "under the rootdir; there gpucheck's array namespace is gpu_backend.xp"])
    # Without a project xp, nothing is said.
    (pytester.path / "conftest.py").unlink()
    result = pytester.runpytest("--fixtures")
    result.stdout.no_fnmatch_line("*overrides gpucheck's xp*")


def test_the_jax_memory_setting_is_one_header_line(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")
    for name in ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION",
                 "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv(name, raising=False)  # put back (unset) after the run
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest("--gpu-backends=numpy,jax-cpu")
    result.stdout.fnmatch_lines([
        "gpucheck: XLA_PYTHON_CLIENT_PREALLOCATE=false for the whole run (a JAX backend is "
        "selected: JAX's first operation would reserve 75% of each GPU beside the other "
        "frameworks; JAX reads it once per process)"])
    # A value the user chose is kept, and then there is nothing to say.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    result = pytester.runpytest("--gpu-backends=numpy,jax-cpu")
    result.stdout.no_fnmatch_line("*for the whole run*")


MIXED = """
def test_ours(gpu_backend):
    assert gpu_backend.name == "cupy", "not on cupy"


def test_plain():
    assert 1 == 2, "the project's own"
"""


def test_the_ci_page_names_the_plugins_items_only(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On GitHub Actions, a run with items of the plugin's gets the job summary and the
    annotations for those; the project's own failing test is pytest's to report (the
    summary counts it nowhere, no annotation names it).  The twin, a run of the project's
    own test alone, gets neither, unless asked by option."""
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest("-n0")
    result.assert_outcomes(failed=2)
    text = summary.read_text(encoding="utf-8")
    assert "### Failures (1)" in text, text
    assert "test_ours[numpy]" in text
    assert "test_plain" not in text
    annotations = [line for line in result.stdout.lines if line.startswith("::error")]
    assert len(annotations) == 1, annotations
    assert "test_ours" in annotations[0]
    reruns = [line for line in result.stdout.lines if line.startswith("  rerun: ")]
    assert reruns == ["  rerun: pytest 'test_mixed.py::test_ours[numpy]' --gpu-backends=numpy"]

    summary.unlink()
    result = pytester.runpytest("-n0", "-k", "test_plain")
    result.assert_outcomes(failed=1)
    assert not summary.exists()
    assert not [line for line in result.stdout.lines if line.startswith(("::", "FAIL "))]
    assert not [line for line in result.stdout.lines if "rerun: " in line]
    # Asked by option: written in any run.
    result = pytester.runpytest("-n0", "-k", "test_plain", "--gpu-summary=asked.md",
                                "--gpu-report=report.json")
    result.assert_outcomes(failed=1)
    assert (pytester.path / "report.json").exists()
    result.stdout.fnmatch_lines(["gpucheck: report written to report.json"])
