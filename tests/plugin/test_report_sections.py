"""A plugin's own report section, through ``pytest_gpucheck_report_sections``: a
``conftest.py`` in a temporary project returns one, and it shows in the terminal, the
JSON and Markdown ``--gpu-report`` and the GitHub job summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from user_runs import assert_lines, assert_outcomes, run_pytest

CONFTEST = '''
from pytest_gpucheck.hookspecs import ReportSection


def pytest_gpucheck_report_sections(config):
    """What a project's own tool adds: one section, on every run."""
    return [ReportSection("lint_kernels", {"checked": 3, "clean": True},
                          "## Kernel lint\\n\\n3 kernels checked, all clean\\n",
                          ["kernel lint: 3 kernels checked, all clean"])]
'''

TESTS = '''
def test_ok(gpu_backend):
    pass


def test_outside_the_matrix():
    pass
'''


def _project(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_things=TESTS)


def _check(pytester: pytest.Pytester, output: str, summary: Path) -> None:
    """``output``: the second run's (``--gpu-report=report.json``) terminal text."""
    assert_outcomes(output, passed=2)
    assert_lines(output, ["kernel lint: 3 kernels checked, all clean",
                          "gpucheck: report written to report.json"])
    data = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert data["sections"]["lint_kernels"] == {"checked": 3, "clean": True}
    markdown = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert markdown.endswith("## Kernel lint\n\n3 kernels checked, all clean\n"), markdown
    job = summary.read_text(encoding="utf-8")
    assert ("<details>\n<summary>Kernel lint</summary>\n\n## Kernel lint\n\n"
            "3 kernels checked, all clean\n\n</details>") in job, job


@pytest.mark.slow
def test_a_conftest_section_reaches_every_report_as_users_run_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m pytest`` in a subprocess, as a user runs it (no plugin-loading shortcut)."""
    _project(pytester)
    summary = pytester.path / "step-summary.md"
    # The CI step's variable (which user_env does not inherit from this session).
    step = {"GITHUB_STEP_SUMMARY": str(summary)}
    run_pytest(pytester.path, "--gpu-report=report.md", timeout=600, extra_env=step)
    result = run_pytest(pytester.path, "--gpu-report=report.json", timeout=600,
                        extra_env=step)
    _check(pytester, result.stdout, summary)


def test_a_conftest_section_reaches_every_report(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same in-process (the fast loop's twin of the test above)."""
    _project(pytester)
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--gpu-report=report.md")
    result = pytester.runpytest("--gpu-report=report.json")
    _check(pytester, result.stdout.str(), summary)


def test_a_section_shows_without_a_report_or_a_matrix_cell(pytester: pytest.Pytester) -> None:
    """No ``--gpu-report`` and no test on a backend: the section's lines still print (the
    core loads its report machinery because a plugin has something to say)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["kernel lint: 3 kernels checked, all clean"])


def test_without_the_hook_no_section_and_no_report_machinery(
        pytester: pytest.Pytester) -> None:
    """The twin: a plain run with no section prints nothing of the report."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "kernel lint" not in result.stdout.str()
    assert "gpucheck conformance matrix" not in result.stdout.str()


def test_sections_come_in_the_order_the_plugins_registered(
        pytester: pytest.Pytester) -> None:
    """Two plugins' sections: the first registered first, whatever pluggy's call order."""
    pytester.makeconftest(CONFTEST + '''

class Later:
    def pytest_gpucheck_report_sections(self, config):
        return [ReportSection("later", None, "", ["later section"])]


def pytest_configure(config):
    config.pluginmanager.register(Later(), "later-plugin")
''')
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["kernel lint: 3 kernels checked, all clean", "later section"])
