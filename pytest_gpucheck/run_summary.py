"""The end of a run: the matrix's recorder, and the terminal summary's part of the plugin
(the features' sections, the conformance matrix, what pytest's summary lacks of each
failure, the headline), the report file with the run's facts and what a CI page shows.

``plugin.py``'s ``pytest_terminal_summary`` calls :func:`write_summary`; nothing of
the report is imported by a run that recorded nothing and asked for no report.  The
run's facts (:func:`run_facts`: when and on what it was made) are gathered here, not in
``reporting/``: the commit may take a short ``git`` command, which starts through the
process layer, and the process layer reports through ``reporting/`` (a cycle otherwise).
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.backends import BACKENDS
from pytest_gpucheck.reporting import ci
from pytest_gpucheck.reporting.terminal_width import fit, terminal_width
from pytest_gpucheck.selection import get_selection

#: pytest-cov combines its data when the test loop ends, while the plugin's children are
#: still up: what they run would be missing without a word.  In the header of a run that
#: selects backends, else at the end of a run with items of the plugin's.
COV_NOTE = ("gpucheck: --cov measures this process only: code run in isolation workers, the "
            "numba-cudasim child and MPI ranks is not covered (--gpu-isolate=none runs "
            "backend items here)")


class MatrixRecorder:
    """Counts every logged report (local, from xdist workers, or replayed) in the matrix."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Only the plugin's items: a project's own tests are pytest's to report.  Their
        # failures outside the matrix (a benchmark, a test on gpu_device) are kept too.
        if not getattr(report, "gpucheck_ours", False):
            return
        from pytest_gpucheck.reporting.report import get_matrix

        matrix = get_matrix(self.config)
        matrix.ours = True
        if getattr(report, "gpucheck_cell", None) or report.failed:
            matrix.record(report)


def write_failures(terminalreporter: Any, matrix: Any, width: int | None) -> None:
    """What pytest's short test summary lacks of each failure: its ``rerun:`` command, and
    its one-line reason where pytest's summary does not show it."""
    # -r's characters: pytest's summary lists call failures under 'f', errors under 'E'.
    reportchars = str(getattr(terminalreporter, "reportchars", "") or "")
    config = terminalreporter.config
    # pytest cuts its summary's messages to the terminal's width, except on CI (its
    # running_on_ci: CI or BUILD_NUMBER set) and under -vv.
    whole = ((any(name in os.environ for name in ("CI", "BUILD_NUMBER"))
              or config.get_verbosity() >= 2)
             and not getattr(config.option, "force_short_summary", False))
    for line in matrix.failure_lines(reportchars, None if whole else (width or 80)):
        # A rerun command stays one line, to be copied from the terminal whole.
        terminalreporter.write_line(line if line.startswith("  rerun: ") else fit(line, width))


def write_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The matrix, the features' sections, the failures, the report and the job summary."""
    selection = get_selection(config)
    path = config.getoption("gpu_report")
    from pytest_gpucheck.hookspecs import report_sections

    sections = report_sections(config)
    # Nothing was recorded (and no report asked for) unless the report module
    # was loaded or a feature has a section: a plain run ends without importing it.
    if not path and not sections and "pytest_gpucheck.reporting.report" not in sys.modules:
        return
    from pytest_gpucheck.reporting.report import MATRIX_KEY, get_matrix
    from pytest_gpucheck.reporting.report_files import write_report

    recorded = config.stash.get(MATRIX_KEY, None)
    # A run without items of the plugin's (a project that does not use it) gets nothing
    # of it at its end, unless the user asked: a report file, a summary file or the
    # annotations named by option, or a section a plugin or conftest.py adds.
    if not (path or sections or ci.asked_for(config)
            or (recorded is not None and recorded.ours)):
        return
    matrix = get_matrix(config)
    for section in sections:
        matrix.add(section)
    if selection.explicit_option:
        matrix.backends_info = {
            name: {"version": probe.version, "device": probe.device, "reason": probe.reason}
            for name, probe in selection.probes.items()
        }
    if path or ci.summary_path(config) is not None:
        matrix.run = run_facts(config.rootpath)
    order = list(BACKENDS)
    width = terminal_width(config)
    lines = matrix.terminal_lines(order, width)
    # The features' longer sections first (the interop pair matrix with its known defects,
    # the benchmarks...), the conformance matrix last: the run ends with what the user
    # came for, then one line per section (a pointer back to a longer one). Without a
    # matrix, the sections are all there is.
    for section in matrix.long_sections() if lines else matrix.sections.values():
        # Each feature's lines (the benchmark figures were 180 columns), wrapped here,
        # where the width is known, the way the matrix wraps its reasons.
        for line in section.terminal_lines:
            terminalreporter.write_line(fit(line, width))
    if lines:
        terminalreporter.write_sep("=", "gpucheck conformance matrix")
        for line in lines:
            terminalreporter.write_line(line)
        write_failures(terminalreporter, matrix, width)
        terminalreporter.write_line(fit(matrix.headline(terminal=True), width))
        for line in matrix.lines_after_the_matrix(path):
            terminalreporter.write_line(fit(line, width))
    elif matrix.failures:
        # No matrix (a run of benchmarks only: they have no cell), but its failures
        # still get their one-line reason and the command that reruns them.
        write_failures(terminalreporter, matrix, width)
    if path:
        try:
            write_report(matrix, Path(path), order)
        except OSError as exc:
            # A report that was asked for and not written fails the run, in one line.
            terminalreporter.write_line(
                f"gpucheck: could not write --gpu-report={path}: {exc.strerror or exc}; "
                "choose a writable path", red=True)
            session = getattr(terminalreporter, "_session", None)
            if session is not None:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            terminalreporter.write_line(f"gpucheck: report written to {path}")
    ci.publish(config, terminalreporter, matrix, order)
    if matrix.ours and config.getoption("cov_source", None) and not selection.explicit_option:
        # A run that selected no backends said nothing of --cov in its header.
        terminalreporter.write_line(fit(COV_NOTE, width), yellow=True)


def run_facts(rootpath: Path) -> dict[str, Any]:
    """When and on what the run was made: UTC timestamp, commit, host, versions."""
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": current_commit(rootpath),
        "host": platform.node(),
        "platform": platform.platform(),
        "versions": {
            "python": platform.python_version(),
            "pytest": pytest.__version__,
            "pytest-gpucheck": version("pytest-gpucheck"),
        },
    }


def current_commit(rootpath: Path) -> str:
    """The commit under test: the CI's variable (GitHub, GitLab), else ``git``, else ""."""
    for variable in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        if os.environ.get(variable):
            return os.environ[variable]
    from pytest_gpucheck.processes import run_command

    done = run_command(["git", "rev-parse", "HEAD"], cwd=rootpath, timeout=10)
    if isinstance(done, str):  # no git, or it hung
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
