"""A fixture of a project's own under one of the plugin's names is not the plugin's.

The plugin decides by it whether a test is one of its own (its end-of-run output) and
whether a launched MPI rank is its session (``pytest_gpucheck/mpi/takeover.py``); by the
name alone, a project's own ``mpi_comm`` fixture made its failures print the plugin's
rerun lines, and under ``mpiexec`` muted rank 1.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.fixtures import gets_plugin_fixture
from pytest_gpucheck.mpi.takeover import uses_our_mpi
from pytest_gpucheck.plugin import uses_the_plugin

CONFTEST = '''
import pytest


@pytest.fixture
def mpi_comm():  # the project's own, under the plugin's name
    return "the project's communicator"


@pytest.fixture
def mpi_size(mpi_size):  # extends the plugin's: still the plugin's underneath
    return mpi_size
'''

TESTS = '''
def test_own(mpi_comm):
    pass


def test_extends(mpi_size):
    pass


def test_plugins(mpi_rank):
    pass


def test_plain():
    pass
'''


def test_a_projects_namesake_fixture_is_not_the_plugins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    items = {item.name: item for item in pytester.getitems(TESTS)}
    names = {"mpi_comm", "mpi_rank", "mpi_size"}
    assert {name: gets_plugin_fixture(item, names) for name, item in items.items()} == {
        "test_own": False, "test_extends": True, "test_plugins": True, "test_plain": False}
    assert not uses_our_mpi(items["test_own"])
    assert uses_our_mpi(items["test_plugins"])
    assert not uses_the_plugin(items["test_own"])
    assert uses_the_plugin(items["test_extends"])
