"""Shared setup for the plugin's own tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]

# pytester's in-process runs drop modules first imported during the run, and
# extension modules such as NumPy's cannot be imported twice in one process:
# import the frameworks the CPU tier probes once, up front.
for _module in ("numpy", "torch", "jax", "jax.numpy", "numba", "array_api_compat",
                "array_api_compat.numpy", "array_api_compat.torch", "array_api_strict"):
    with contextlib.suppress(ImportError):
        __import__(_module)


@pytest.fixture(autouse=True)
def _registrations_stay_in_their_test() -> Iterator[None]:
    """In-process pytester runs load the temporary project's ``conftest.py``, whose
    ``@implements`` registrations live in the module-level registry: without this, a
    later test in the same worker sees them (``(impl,) = implementations(...)`` then
    finds two).  The registry is put back as it was after every test."""
    from pytest_gpucheck import registry

    implementations = dict(registry._implementations)
    not_applicable = dict(registry._not_applicable)
    # Whether the bundled implementations were loaded goes back too: loaded during a test
    # (an in-process run) and then taken out with the rest, they would otherwise never be
    # loaded again in this worker, and later in-process runs would lack them.
    bundled_loaded = registry._bundled_loaded
    yield
    registry._bundled_loaded = bundled_loaded
    registry._implementations.clear()
    registry._implementations.update(implementations)
    registry._not_applicable.clear()
    registry._not_applicable.update(not_applicable)


@pytest.fixture(autouse=True)
def _runs_started_here_are_no_xdist_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite runs under pytest-xdist (the project's addopts), whose workers carry
    ``PYTEST_XDIST_WORKER``; a pytest run a test starts in a subprocess inherited it and
    took itself for an xdist worker (a spawned MPI session then started one job per item
    instead of one per rank count).  A user's run has none of these: each test's runs
    start without them."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _a_wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs these tests start (in-process and in subprocesses) print at 250 columns
    unless a test sets another width: their checks read each of the plugin's lines whole.
    At a user's 80 columns the lines wrap; tests/plugin/test_output_width.py and the matrix
    tests set COLUMNS=80 (how pytest's terminal writer learns a width) to check that."""
    monkeypatch.setenv("COLUMNS", "250")
