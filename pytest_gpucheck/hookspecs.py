"""Hooks through which feature plugins extend the core.

The core (``plugin.py``, :mod:`pytest_gpucheck.processes.child_options`,
:mod:`pytest_gpucheck.reporting.report`) never names a feature's options or the content of
its report: each feature plugin (``bench``, ``interop``, ``mpi``, ...) implements
these hooks.  They are registered with ``config.pluginmanager.add_hookspecs``
when the plugin loads, so a conftest or a third-party plugin can implement
them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class ReportSection:
    """A feature's own part of the report (the interop pair matrix, the benchmark gate).

    ``key`` names it in the JSON report (``"sections": {key: data}``; a later section
    with the same key replaces an earlier one); ``data`` is what the JSON holds (anything
    :func:`json.dumps` takes); ``markdown`` is appended to the Markdown report and
    becomes a collapsed block of the GitHub job summary (titled by its first ``#``
    heading, else by ``key``); ``terminal_lines`` go to the terminal summary, which
    ends with the conformance matrix: a section of one line is printed after the
    matrix, a longer one before it, with a line after the matrix pointing back to it
    (named by the Markdown's heading).  Empty parts are left out where they would show.
    """

    key: str
    data: Any
    markdown: str = ""
    terminal_lines: Sequence[str] = ()


@pytest.hookspec
def pytest_gpucheck_report_sections(config: pytest.Config) -> list[ReportSection]:
    """Sections this plugin adds to the report: the terminal summary, ``--gpu-report``
    (JSON and Markdown) and the GitHub job summary.

    Called once, in the process that prints the summary (never in a child process or a
    pytest-xdist worker), at ``pytest_terminal_summary``, after every test has run and
    every ``pytest_sessionfinish`` has been called, so a section can report on the whole
    run.  Return an empty list when there is nothing to say.  Sections appear in the
    order the plugins were registered (the bundled features first, then ``conftest.py``
    files and other plugins).  Example, in a ``conftest.py``::

        from pytest_gpucheck.hookspecs import ReportSection

        def pytest_gpucheck_report_sections(config):
            return [ReportSection("my_tool", {"checked": 3}, "## My tool\n\n3 checked\n",
                                  ["my tool: 3 checked"])]
    """
    return []  # a specification: pluggy calls the implementations, never this body


def report_sections(config: pytest.Config) -> list[ReportSection]:
    """Every plugin's sections, in the order the plugins were registered (pluggy calls
    the implementations last-registered first, so their results are reversed)."""
    results = config.hook.pytest_gpucheck_report_sections(config=config)
    return [section for sections in reversed(results) for section in sections or ()]


@pytest.hookspec
def pytest_gpucheck_child_args(config: pytest.Config) -> list[str]:
    """Command-line arguments a child pytest needs to run this session's items as here.

    Called by the parent each time it starts a child (the simulator child, a
    spawned MPI job, an isolation worker).  Return ``--option=value`` strings
    for the options of your feature that the user set, so the child collects
    and runs the same items the same way (an empty list when none is set);
    every implementation's list is added to the child's command line.  A
    feature whose work is done in the parent (a gate over all results) need
    not forward that part.
    """
    return []  # a specification: pluggy calls the implementations, never this body


@pytest.hookspec
def pytest_gpucheck_rerun_args(config: pytest.Config) -> list[str]:
    """Options the ``rerun:`` command of a failed item needs to fail the same way.

    Called once, in the process that prints the summary, when the report is built.
    Return ``--option=value`` strings for the options of your feature that decide a
    failure (the benchmark gate's baseline and family level: without them the pasted
    command passes with the regression still in place); paths absolute, since the
    command may be pasted anywhere in the project.
    """
    return []  # a specification: pluggy calls the implementations, never this body


__all__ = ["ReportSection", "pytest_gpucheck_child_args", "pytest_gpucheck_report_sections",
           "pytest_gpucheck_rerun_args",
           "report_sections"]
