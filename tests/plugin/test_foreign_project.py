"""Installed beside a project that does not use it, the plugin changes nothing that project
did not ask for (issue 44): its hypothesis profiles, its CI page, its output.

The foreign project, in the style of the peer checks (array-api-tests, pytest-benchmark's
and ndindex's own suites run with and without the plugin): its own conftest.py registers
hypothesis profiles named ``ci`` and ``dev`` with example counts of its own, one test
fails, a passing hypothesis test counts its examples in a file, and the run happens on
GitHub Actions (``GITHUB_ACTIONS=true``, ``CI=true``, ``GITHUB_STEP_SUMMARY`` set).  It runs
in a subprocess as the user runs it, once with the plugin (installed: pytest loads it by
its entry point) and once without (``-p no:gpucheck``, the entry point's name in
pyproject.toml), and the two must agree: the same example counts, the same output apart
from at most one header line of ours (none under ``-q``), no job summary and no
``::error`` annotation.

Before issue 44 all of these failed: the plugin replaced the project's ``ci`` (37
examples became 12) and ``dev`` (7 became 10), appended "gpucheck: 1 fail outside the
matrix" to the job summary, printed an ``::error`` annotation titled ``gpucheck: ...``,
two header lines, a "no collected test uses" line (under ``-q`` too) and a
``FAIL``/``rerun:`` block that repeated pytest's short summary.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from user_runs import run_pytest, write_project

pytestmark = pytest.mark.slow

FOREIGN_CONFTEST = '''
from hypothesis import settings

# The project's own profiles, under the names hypothesis's documentation uses.
settings.register_profile("ci", max_examples=37, derandomize=True, database=None)
settings.register_profile("dev", max_examples=7, database=None)
'''

FOREIGN_TESTS = '''
import os

from hypothesis import given, strategies as st


def test_arithmetic():
    assert 1 + 1 == 3, "arithmetic is broken"


@given(st.integers())
def test_counts_its_examples(n):
    with open(os.environ["FOREIGN_EXAMPLES"], "a", encoding="utf-8") as log:
        log.write(f"{n}\\n")
'''

#: pytest's own header line that lists the plugins it loaded: it names this one when it
#: is loaded, by design, so the comparison leaves it out.
PLUGINS_LINE = re.compile(r"^plugins: ")
#: The duration in pytest's last line.
DURATION = re.compile(r" in \d+(\.\d+)?s( \([0-9:]+\))?")


def _run(project: Path, tmp_path: Path, name: str, *args: str) -> tuple[list[str], int, str]:
    """The run's output lines (durations and pytest's ``plugins:`` line left out), the
    examples its hypothesis test ran, and what it appended to the job summary."""
    examples = tmp_path / f"{name}.examples"
    summary = tmp_path / f"{name}.summary.md"
    done = run_pytest(project, *args, timeout=240, extra_env={
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_STEP_SUMMARY": str(summary),
        "FOREIGN_EXAMPLES": str(examples), "COLUMNS": "120"})
    assert done.returncode == 1, done.stdout + done.stderr  # the project's one failure
    lines = [DURATION.sub(" in Ns", line) for line in done.stdout.splitlines()
             if not PLUGINS_LINE.match(line)]
    count = len(examples.read_text(encoding="utf-8").splitlines()) if examples.exists() else 0
    written = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return lines, count, written


def _extra_lines(with_plugin: list[str], without: list[str]) -> list[str]:
    """The lines of ``with_plugin`` that ``without`` lacks, when that is all that differs
    (lines inserted, none changed or removed); else the whole of both, to be read."""
    extra: list[str] = []
    rest = list(without)
    for line in with_plugin:
        if rest and line == rest[0]:
            rest.pop(0)
        else:
            extra.append(line)
    if rest:
        return ["-- with the plugin:", *with_plugin, "-- without:", *without]
    return extra


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    return write_project(tmp_path / "foreign", {"conftest.py": FOREIGN_CONFTEST,
                                                "test_foreign.py": FOREIGN_TESTS})


@pytest.mark.parametrize(("profile", "examples"), [("ci", 37), ("dev", 7)])
def test_a_foreign_project_runs_as_without_the_plugin(foreign: Path, tmp_path: Path,
                                                       profile: str, examples: int) -> None:
    """The project's profile, its output and its CI page, with and without the plugin: at
    default verbosity at most one header line of ours differs, under ``-q`` nothing."""
    option = f"--hypothesis-profile={profile}"
    without, count_without, summary_without = _run(foreign, tmp_path, "without",
                                                   "-p", "no:gpucheck", option)
    with_plugin, count_with, summary_with = _run(foreign, tmp_path, "with", option)
    # The project's own profile applies without the plugin (the check's premise) and
    # with it.
    assert count_without == examples
    assert count_with == count_without
    assert summary_without == ""
    assert summary_with == ""
    extra = _extra_lines(with_plugin, without)
    assert len(extra) <= 1, extra
    assert all(line.startswith("gpucheck: ") for line in extra), extra
    assert not any(line.startswith("::") for line in with_plugin)
    # Under -q pytest prints no header, and the plugin prints nothing at all.
    quiet_without, _, _ = _run(foreign, tmp_path, "quiet-without", "-p", "no:gpucheck",
                               "-q", option)
    quiet_with, quiet_count, quiet_summary = _run(foreign, tmp_path, "quiet-with", "-q",
                                                  option)
    assert quiet_with == quiet_without, _extra_lines(quiet_with, quiet_without)
    assert quiet_count == examples
    assert quiet_summary == ""


#: A project that uses pytest-mpi's ``mpi`` marker, with a stand-in for pytest-mpi in its
#: conftest.py (its documented behaviour: ``mpi`` tests are skipped unless ``--with-mpi``,
#: ``min_size`` skips a job that is too small), so the check needs no extra install.
PYTEST_MPI_CONFTEST = '''
import pytest


def pytest_addoption(parser):
    parser.addoption("--with-mpi", action="store_true")


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: run with MPI (pytest-mpi's marker)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = item.get_closest_marker("mpi")
        if mark is None:
            continue
        if not config.getoption("with_mpi"):
            item.add_marker(pytest.mark.skip(reason="needs --with-mpi"))
        elif mark.kwargs.get("min_size", 1) > 1:  # one process here: no launcher
            item.add_marker(pytest.mark.skip(reason="needs a larger MPI job"))
'''

PYTEST_MPI_TESTS = '''
import pytest


@pytest.mark.mpi
def test_in_an_mpi_job():
    pass


@pytest.mark.mpi(min_size=2)
def test_in_a_job_of_two():
    pass


def test_plain():
    pass
'''


@pytest.mark.parametrize("args", [(), ("--with-mpi",), ("--with-mpi", "-m", "mpi")],
                         ids=["default", "with-mpi", "selected"])
def test_pytest_mpi_markers_are_left_to_their_owner(tmp_path: Path, args: tuple[str, ...]
                                                     ) -> None:
    """The ``mpi`` marker's name is shared with pytest-mpi: its shapes (a bare
    ``@pytest.mark.mpi``, ``mpi(min_size=2)``) are not the plugin's, so a project using
    them runs as without the plugin.  Before, the plugin read both as malformed markers of
    its own: ``@pytest.mark.mpi needs ranks``, ``got unknown argument(s) min_size``, exit
    4 and no test run, in a project that had only installed it."""
    project = tmp_path / "mpi-project"
    project.mkdir()
    (project / "conftest.py").write_text(PYTEST_MPI_CONFTEST, encoding="utf-8")
    (project / "test_mpi_project.py").write_text(PYTEST_MPI_TESTS, encoding="utf-8")
    outputs = []
    for plugin in ([], ["-p", "no:gpucheck"]):
        done = run_pytest(project, "-q", "-rs", *plugin, *args, timeout=240,
                          extra_env={"COLUMNS": "120"})
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append([DURATION.sub(" in Ns", line) for line in done.stdout.splitlines()])
    with_plugin, without = outputs
    assert with_plugin == without, _extra_lines(with_plugin, without)
    # The stand-in's own verdicts (the check's premise): what pytest-mpi would decide.
    summary = without[-1]
    expected = {(): "1 passed, 2 skipped", ("--with-mpi",): "2 passed, 1 skipped",
                ("--with-mpi", "-m", "mpi"): "1 passed, 1 skipped, 1 deselected"}[args]
    assert summary.startswith(expected), without
