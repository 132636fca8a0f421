"""This checkout's pytest settings for a run without pytest-xdist.

pyproject.toml's ``addopts`` carry ``-n auto --dist loadscope``: ``python -m pytest``
runs the project's suite on every core through pytest-xdist (the ``[test]`` extra).
An install without it (``pip install -e .``, the core only) refused every run from the
checkout before collecting anything, ``pytest conformance`` included: "unrecognized
arguments: -n --dist loadscope".  Where pytest-xdist is not loaded (not installed, or
``-p no:xdist``), this file accepts those two options and ignores them: the run is one
process, and its header says so.  Where it is loaded, this file does nothing.
"""

from __future__ import annotations

import pytest

#: Where the accepted options land (not xdist's own names: code that asks whether
#: pytest-xdist distributes, ``config.getoption("numprocesses")``, must read None).
WORKERS_DEST = "gpucheck_checkout_numprocesses"
DIST_DEST = "gpucheck_checkout_dist"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.hasplugin("xdist"):
        return
    group = parser.getgroup("no-xdist", "pytest-xdist is not loaded (this checkout's conftest.py)")
    # _addoption: the lower-case short option, reserved to pytest and given to xdist so.
    group._addoption("-n", "--numprocesses", dest=WORKERS_DEST, default=None, metavar="N",
                     help="accepted and ignored: pytest-xdist is not loaded, so the run is "
                          "one process (pip install pytest-xdist for workers)")
    group.addoption("--dist", dest=DIST_DEST, default=None, metavar="MODE",
                    help="accepted and ignored, as -n")


def pytest_report_header(config: pytest.Config) -> str | None:
    given = config.getoption(WORKERS_DEST, None)
    if given is None:
        return None
    return (f"pytest-xdist is not loaded: -n {given} (this checkout's addopts) is ignored, "
            "the run is one process (pip install pytest-xdist for workers)")
