"""Usage errors found while items are collected: a malformed marker, wherever it is collected.

A bad ``@pytest.mark.gpu_backends(...)`` or ``@pytest.mark.mpi(...)`` is found during
collection, in whichever process collects the items: the process the user started, or
each pytest-xdist worker (the xdist controller collects nothing).  Every one found is
kept (:func:`add`), one line each, and the run stops at the end of collection with all
of them in one :class:`pytest.UsageError` (exit 4), so each fix does not cost another
run.  Raised in an xdist worker, the error would be an INTERNALERROR in the controller
(the worker announces its items before it stops); so a worker runs nothing and hands
its lines to the controller in its ``workeroutput`` (:func:`hand_to_controller`), and
the controller raises them when the worker goes down (:func:`raise_from_worker`).
Isolation workers, the numba-cudasim child and spawned MPI ranks collect items that
their parent collected first, so the parent has stopped the run before they start.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

_ERRORS_KEY = pytest.StashKey[list[str]]()
#: The key of an xdist worker's ``workeroutput`` that carries its usage errors.
WORKER_OUTPUT_KEY = "gpucheck_usage_errors"


def add(config: pytest.Config, line: str) -> None:
    """Keep one usage error (a line naming the item and the fix), once."""
    errors = config.stash.setdefault(_ERRORS_KEY, [])
    if line not in errors:
        errors.append(line)


def found(config: pytest.Config) -> list[str]:
    """The usage errors found so far, in the order they were found."""
    errors: list[str] = config.stash.get(_ERRORS_KEY, [])
    return list(errors)


def hand_to_controller(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: run nothing, and give the errors to the controller.

    With no items announced, the controller schedules nothing here, and the worker
    ends its session normally; its ``workeroutput`` reaches the controller's
    ``pytest_testnodedown``.
    """
    config.workeroutput[WORKER_OUTPUT_KEY] = found(config)  # type: ignore[attr-defined]
    items[:] = []


def raise_from_worker(node: Any) -> None:
    """In the xdist controller: raise the usage errors a worker handed over, if any."""
    errors = (getattr(node, "workeroutput", None) or {}).get(WORKER_OUTPUT_KEY)
    if errors:
        raise pytest.UsageError(*errors)


def conftest_line(failure: BaseException, rootpath: Path) -> str | None:
    """One usage line for a ``conftest.py`` that failed to load on a registration error,
    or None for any other failure (pytest's own report, with the traceback, fits those).

    ``failure`` is pytest's ``ConftestImportFailure`` (read by its ``path`` and ``cause``,
    pytest's class being private): a :class:`~pytest_gpucheck.registry.RegistrationError`
    (``@implements`` with an unknown kernel, a signature off the contract ...) or a
    :class:`pytest.UsageError` (an interop converter's registration) becomes
    ``conftest.py:LINE: message``, the line of the conftest that registered.
    """
    from pytest_gpucheck.registry import RegistrationError

    cause, path = getattr(failure, "cause", None), getattr(failure, "path", None)
    if not isinstance(cause, (RegistrationError, pytest.UsageError)) or path is None:
        return None
    lines = [frame.lineno for frame in traceback.extract_tb(cause.__traceback__)
             if Path(frame.filename) == Path(path) and frame.lineno is not None]
    try:
        shown = str(Path(path).relative_to(rootpath))
    except ValueError:
        shown = str(path)
    where = f"{shown}:{_decorator_line(str(path), lines[-1])}" if lines else shown
    return f"{where}: {cause}"


def _decorator_line(path: str, line: int) -> int:
    """The line of the ``@implements(...)`` a failure came from: Python 3.11 reports a
    decorator's call at its own line, 3.10 at the ``def`` below it; from a ``def`` line,
    the first decorator of the block of lines right above it."""
    import linecache

    if not linecache.getline(path, line).lstrip().startswith(("def ", "async def ")):
        return line
    first = line
    for above in range(line - 1, 0, -1):
        text = linecache.getline(path, above).strip()
        if not text:
            break
        if text.startswith("@"):
            first = above
    return first


__all__ = ["WORKER_OUTPUT_KEY", "add", "conftest_line", "found", "hand_to_controller",
           "raise_from_worker"]
