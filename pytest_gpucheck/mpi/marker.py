"""The ``mpi`` marker: which rank counts a test runs with, and its timeout.

``@pytest.mark.mpi(ranks=2)``, ``@pytest.mark.mpi(ranks=[2, 4], timeout=60)``
or ``@pytest.mark.mpi(2)``.  Under a launcher the test runs when the job's
size is one of ``ranks`` and is skipped otherwise; spawned, it runs once for
every count the launcher can give.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pytest

MARKER = "mpi"
MARKER_HELP = (
    "mpi(ranks=N or [N, ...], timeout=SECONDS): run this test on N MPI ranks (spawned under "
    "--gpu-mpi-launcher, or on every rank under mpiexec); a failure on any rank fails it on "
    "every rank, and a rank still running at the timeout is stopped and reported."
)


#: The longest timeout accepted (seconds): a week.  Longer is a typo, and the
#: watchdog's timers (faulthandler's included) reject values near their limits.
MAX_TIMEOUT = 7 * 24 * 3600.0


def timeout_problem(value: object) -> str | None:
    """Why ``value`` is not a usable timeout in seconds, or None if it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "it must be a number of seconds"
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        return f"it must be a number of seconds > 0 and <= {MAX_TIMEOUT:g} (a week)"
    return None


@dataclass(frozen=True)
class MpiSpec:
    """What an ``mpi`` marker asks for."""

    ranks: tuple[int, ...]
    timeout: float | None  # None: the session default (--gpu-mpi-timeout)


def _usage(nodeid: str, problem: str) -> pytest.UsageError:
    return pytest.UsageError(
        f"{nodeid}: @pytest.mark.mpi {problem}; use @pytest.mark.mpi(ranks=2) or "
        f"@pytest.mark.mpi(ranks=[2, 4], timeout=60)"
    )


def parse_mpi_mark(mark: pytest.Mark, nodeid: str) -> MpiSpec:
    """Validate one ``mpi`` marker; raise a one-line :class:`pytest.UsageError` if malformed."""
    kwargs = dict(mark.kwargs)
    unknown = set(kwargs) - {"ranks", "timeout"}
    if unknown:
        raise _usage(nodeid, f"got unknown argument(s) {', '.join(sorted(unknown))}")
    if mark.args:
        if len(mark.args) > 1 or "ranks" in kwargs:
            raise _usage(nodeid, "takes the rank counts once")
        kwargs["ranks"] = mark.args[0]
    if "ranks" not in kwargs:
        raise _usage(nodeid, "needs ranks")
    raw = kwargs["ranks"]
    counts: Iterable[object] = raw if isinstance(raw, (list, tuple)) else [raw]
    ranks: list[int] = []
    for count in counts:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise _usage(nodeid, f"got ranks={raw!r}: rank counts must be integers >= 1")
        if count not in ranks:
            ranks.append(count)
    if not ranks:
        raise _usage(nodeid, "got an empty list of rank counts")
    timeout = kwargs.get("timeout")
    problem = None if timeout is None else timeout_problem(timeout)
    if problem is not None:
        raise _usage(nodeid, f"got timeout={timeout!r}: {problem}")
    return MpiSpec(tuple(sorted(ranks)), None if timeout is None else float(timeout))


#: What only this plugin's ``mpi`` marker carries: ``ranks=`` and ``timeout=`` (or the rank
#: counts as its one positional argument).
OUR_ARGUMENTS = frozenset({"ranks", "timeout"})


def is_ours(mark: pytest.Mark) -> bool:
    """Whether an ``mpi`` marker is this plugin's.

    The name is shared: pytest-mpi's marker is a bare ``@pytest.mark.mpi`` or
    ``@pytest.mark.mpi(min_size=2)``, and projects that launch their own MPI jobs mark
    tests ``@pytest.mark.mpi`` to select them with ``-m mpi``.  Claiming those would turn
    a project that merely has this plugin installed into a usage error (exit 4) or run
    its tests on ranks it did not ask for, so only a marker that names rank counts
    (``ranks=``, a positional count) or a ``timeout=`` is ours; any other is left to
    its owner.  A user of ours who forgets ``ranks`` still hears of it: the ``mpi_comm``
    fixtures fail with the marker's right form.
    """
    return bool(mark.args) or bool(OUR_ARGUMENTS & set(mark.kwargs))


def our_mark(item: pytest.Item) -> pytest.Mark | None:
    """The closest ``mpi`` marker of ``item`` that is this plugin's (:func:`is_ours`)."""
    return next((mark for mark in item.iter_markers(MARKER) if is_ours(mark)), None)


def mpi_spec(item: pytest.Item) -> MpiSpec | None:
    """The item's ``mpi`` spec (the closest marker of ours wins), or None if it has none."""
    mark = our_mark(item)
    return None if mark is None else parse_mpi_mark(mark, item.nodeid)
