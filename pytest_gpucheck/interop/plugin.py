"""pytest hooks of the interop suite: the pair matrix in the terminal and in ``--gpu-report``.

Loading this module imports no array framework (not even NumPy): the suite's
modules are imported by the suite itself.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from pytest_gpucheck.hookspecs import ReportSection
from pytest_gpucheck.reporting.terminal_width import terminal_width

# The suite's modules load when the suite (or a user's converter) is imported:
# a run without interop checks never imports them.
if TYPE_CHECKING:
    from pytest_gpucheck.interop.converters import Converter
    from pytest_gpucheck.interop.matrix import PairMatrix

MATRIX_KEY: pytest.StashKey[PairMatrix] = pytest.StashKey()
_CONVERTERS = f"{__package__}.converters"

#: Registry content before each session's conftest files ran, by plugin manager
#: (None: the registry module was not loaded yet, so nothing was registered).
_registry_before: dict[int, dict[str, Converter] | None] = {}


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # Runs before any conftest.py is imported: what users register from here on
    # belongs to this session and is forgotten at its end, so sessions run one
    # after another in one process (pytester) do not see each other's converters.
    converters = sys.modules.get(_CONVERTERS)
    _registry_before[id(pluginmanager)] = converters.snapshot() if converters else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "interop: a zero-copy interop check (DLPack / CUDA Array Interface)")
    config.pluginmanager.register(InteropRecorder(config), "gpucheck-interop-recorder")


class InteropRecorder:
    """Feeds every logged report (local, xdist, or replayed from a child) to the matrix."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        matrix = self.config.stash.get(MATRIX_KEY, None)
        if matrix is None:
            if not report.user_properties:  # interop items always carry their cell
                return
            from pytest_gpucheck.interop.matrix import PairMatrix

            matrix = self.config.stash[MATRIX_KEY] = PairMatrix()
        matrix.record(report)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    pairs = sys.modules.get(f"{__package__}.pairs")
    if pairs is None:  # the suite was not collected, so no item is a pair
        return
    cell_property, pair_type = pairs.CELL_PROPERTY, pairs.Pair
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        pair = params.get("interop_pair")
        if isinstance(pair, pair_type):
            item.user_properties.append((cell_property, pair.cell()))


def pytest_gpucheck_report_sections(config: pytest.Config) -> list[ReportSection]:
    """The pair matrix, as a section of the core report."""
    matrix = config.stash.get(MATRIX_KEY, None)
    if matrix is None or not (matrix.cells or matrix.changes):
        return []
    return [ReportSection("interop", matrix.to_json(), matrix.markdown(),
                          ("", "gpucheck interop pair matrix",
                           *matrix.terminal_lines(terminal_width(config))))]


def pytest_unconfigure(config: pytest.Config) -> None:
    saved = _registry_before.pop(id(config.pluginmanager), None)
    converters = sys.modules.get(_CONVERTERS)
    if converters is not None:
        converters.restore(saved or {})
