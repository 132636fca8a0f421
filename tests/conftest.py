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
    yield
    registry._implementations.clear()
    registry._implementations.update(implementations)
    registry._not_applicable.clear()
    registry._not_applicable.update(not_applicable)


@pytest.fixture(autouse=True)
def _a_wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs these tests start (in-process and in subprocesses) print at 250 columns
    unless a test sets another width: their checks read each of the plugin's lines whole.
    At a user's 80 columns the lines wrap; tests/test_output_width.py and the matrix
    tests set COLUMNS=80 (how pytest's terminal writer learns a width) to check that."""
    monkeypatch.setenv("COLUMNS", "250")
