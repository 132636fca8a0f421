"""Whether a launched rank's session is the plugin's: decided after collection, the same
way on every rank, with no message between the ranks.

Under a launcher (``mpiexec -n 2 python -m pytest``) every rank runs the session.  The
plugin is installed beside projects that never use its MPI feature (pytest-mpi's, plain
``mpi4py`` tests), and its rank session (:class:`~.rank_session.RankSession`: rank 0
alone prints, collective outcomes, guarded ``Abort``/``os._exit``, no pytest-xdist)
would change what such a project sees.  So it takes over a rank only where the run
uses the feature (:func:`uses_our_mpi`): a test collected with the plugin's ``mpi``
marker (:func:`~.marker.our_mark`: ``ranks=``, a count, ``timeout=``) or one that gets
``mpi_comm``, ``mpi_rank``, ``mpi_size`` or ``mpi_transport`` from the plugin.

Why no rank can decide differently from the others and hang the job: the decision
reads only the rank's own collected items (as collected, before ``-m``/``-k`` deselect
any, and as they are at the end of collection), which the documented rule for
launched runs makes the same on every rank.  A project that
never uses the feature has no such item on any rank, so every rank decides "not
ours" and none of them makes an MPI call of the plugin's, however its collection
differs between ranks.  Where the ranks do differ (a project of ours that collects
differently per rank), the ranks that decided "ours" enter the first collective
under a deadline (``--gpu-mpi-timeout``): faulthandler's timer, which needs no MPI and
no GIL, ends the rank with its stack (and a line naming the cause before it, where
the wait lets Python run: ``MPI_Init`` waiting for the other ranks holds the GIL), and
the launcher ends the job.  A job the plugin spawned
(:data:`~pytest_gpucheck.environment.REPORT_SINK_VARIABLE` set) runs only marked items
and is the plugin's from the start (:mod:`.plugin`).

Until the decision the rank's session is as without the plugin, but for three
things that cannot wait and are undone for a project that is not ours:

* rank ``N > 0``'s terminal output is held (:class:`HeldOutput`): written out at the
  decision when the run is not ours, dropped when it is (only rank 0 prints);
* ``MPI.COMM_WORLD`` and ``MPI.COMM_SELF`` are guarded as soon as anyone imports
  ``mpi4py.MPI`` (:class:`GuardWhenImported`), so that a ``conftest.py`` that keeps one
  at import keeps the guarded one; until the session is ours the guard acts as mpi4py
  (``Abort`` with the code given, mpi4py's repr), and the plugin no longer imports
  ``mpi4py`` before the project's ``conftest.py`` (which may set ``mpi4py.rc``);
* with pytest-xdist (``-n N``) the controller, which collects nothing, marks its
  workers as helpers of a rank (:data:`XDIST_CONTROLLER_VARIABLE`): a worker that
  collects a test of the feature stops the run with the launcher refusal (exit 4); one
  that does not runs as without the plugin.
"""

from __future__ import annotations

import faulthandler
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TextIO

import pytest

from pytest_gpucheck.environment import LaunchedRank
from pytest_gpucheck.fixtures import gets_plugin_fixture
from pytest_gpucheck.mpi.marker import our_mark

#: The plugin's MPI fixtures (``mpi/plugin.py``): a test that gets one uses the feature.
OUR_FIXTURES = frozenset({"mpi_comm", "mpi_rank", "mpi_size", "mpi_transport"})
#: Set by an xdist controller that is a launched rank, to its pid: its workers are helpers.
XDIST_CONTROLLER_VARIABLE = "PYTEST_GPUCHECK_MPI_XDIST_CONTROLLER"
#: Seconds faulthandler waits past the deadline's own line before it ends the rank.
DEADLINE_GRACE = 2.0


def uses_our_mpi(item: pytest.Item) -> bool:
    """Whether ``item`` uses the plugin's MPI feature: the plugin's ``mpi`` marker, or one
    of :data:`OUR_FIXTURES` as the plugin defines it (a project's own fixture of the same
    name, which overrides ours, is not ours)."""
    return our_mark(item) is not None or gets_plugin_fixture(item, OUR_FIXTURES)


def xdist_worker_of_a_rank(config: pytest.Config) -> bool:
    """In a pytest-xdist worker whose controller is a launched rank (see module doc)."""
    controller = os.environ.get(XDIST_CONTROLLER_VARIABLE, "")
    return hasattr(config, "workerinput") and controller == str(os.getppid())


class HeldOutput:
    """A rank's terminal output held until the decision: :meth:`release` writes it out
    and lets later output through, :meth:`drop` discards it and all that follows."""

    def __init__(self, real: TextIO) -> None:
        self._real = real
        self._held: list[str] | None = []
        self._dropped = False

    def write(self, text: str) -> int:
        if self._held is not None:
            self._held.append(text)
        elif not self._dropped:
            self._real.write(text)
        return len(text)

    def flush(self) -> None:
        if self._held is None and not self._dropped:
            self._real.flush()

    def release(self) -> None:
        if self._held is not None:
            self._real.write("".join(self._held))
            self._real.flush()
            self._held = None

    def drop(self) -> None:
        self._held = None
        self._dropped = True

    @property
    def undecided(self) -> bool:
        return self._held is not None

    def __getattr__(self, name: str) -> Any:
        # isatty, encoding, fileno...: the terminal writer's markup and width, as the real one.
        return getattr(self._real, name)


class GuardWhenImported(importlib.abc.MetaPathFinder):
    """Guards ``MPI.COMM_WORLD`` / ``COMM_SELF`` (not strict) right after ``mpi4py.MPI``
    is imported, by whoever imports it first (see module doc)."""

    NAME = "mpi4py.MPI"

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.NAME:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            real_exec(module)
            self.remove()
            from pytest_gpucheck.mpi.rank_session import guard_mpi_abort

            guard_mpi_abort(strict=False, mpi=module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def install(self) -> None:
        """Guard now if ``mpi4py.MPI`` is imported already, else when it is."""
        if self.NAME in sys.modules:
            from pytest_gpucheck.mpi.rank_session import guard_mpi_abort

            guard_mpi_abort(strict=False)
        elif self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def stop_guarding(finder: GuardWhenImported) -> None:
    """A run that is not ours: no guard from now on (communicators the project kept
    stay guarded objects, acting as mpi4py's own)."""
    finder.remove()
    if "pytest_gpucheck.mpi.rank_session" in sys.modules:
        from pytest_gpucheck.mpi.rank_session import guard_is_strict, unguard_mpi_abort

        if not guard_is_strict():
            unguard_mpi_abort()


class Deadline:
    """Ends this rank if the other ranks do not meet it within ``seconds``: a line that
    names the cause (a Python thread), then faulthandler's stacks and ``_exit(1)``
    :data:`DEADLINE_GRACE` seconds later (a C thread: it needs neither MPI nor the GIL,
    which ``MPI_Init`` may hold while it waits for the other ranks)."""

    def __init__(self, seconds: float, rank: int, stderr: TextIO) -> None:
        self._met = threading.Event()
        self.seconds = seconds
        self.rank = rank
        self.stderr = stderr

    def __enter__(self) -> Deadline:
        faulthandler.dump_traceback_later(self.seconds + DEADLINE_GRACE, exit=True,
                                          file=self.stderr)
        threading.Thread(target=self._say, name="gpucheck-mpi-deadline", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        faulthandler.cancel_dump_traceback_later()
        self._met.set()

    def _say(self) -> None:
        if not self._met.wait(self.seconds):
            self.stderr.write(
                f"gpucheck mpi: rank {self.rank} uses the plugin's MPI feature, but the other "
                f"ranks did not join it within {self.seconds:g} s of the end of collection "
                "(--gpu-mpi-timeout): every rank must collect the same tests; this rank "
                "ends the job\n")
            self.stderr.flush()


#: The one import hook of this process (installed before the initial conftests load).
GUARD = GuardWhenImported()


class LaunchedTakeover:
    """In a rank the user launched: decides after collection whether the session is
    the plugin's (:func:`uses_our_mpi`) and only then starts the rank session."""

    def __init__(self, config: pytest.Config, launched: LaunchedRank, default_timeout: float,
                 adopt: Callable[[pytest.Config, Any], None]) -> None:
        self.config = config
        self.adopt = adopt  # stashes and registers the rank session (mpi/plugin.py)
        self.launched = launched
        self.default_timeout = default_timeout
        self.ours = False
        self.decided = False
        self.held: HeldOutput | None = None
        # The real stderr, taken now, while pytest's capture is suspended (during
        # collection fd 2 is pytest's capture file): the rank session's, if it comes.
        self.stderr: TextIO = os.fdopen(os.dup(2), "w", buffering=1)
        self._saved_stdout: TextIO | None = None
        if launched.rank != 0:
            # The terminal reporter, created right after this hook, writes to whatever
            # sys.stdout is then; sys.stdout itself is given back in restore_stdout.
            self._saved_stdout = sys.stdout
            self.held = HeldOutput(sys.stdout)
            sys.stdout = self.held  # type: ignore[assignment]

    def restore_stdout(self) -> None:
        if self._saved_stdout is not None:
            sys.stdout = self._saved_stdout
            self._saved_stdout = None

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # Every collected item, before -m/-k deselect any: the same on every rank.
        if not self.ours and uses_our_mpi(item):
            self.ours = True

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter's "collected N items"
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.decided:
            return
        self.decided = True
        # Also a marker a conftest.py's pytest_collection_modifyitems added.
        self.ours = self.ours or any(uses_our_mpi(item) for item in session.items)
        if not self.ours:
            self._let_go()
            return
        if self.held is not None:
            self.held.drop()
        from pytest_gpucheck import usage_errors

        if usage_errors.found(self.config) or sys.exc_info()[1] is not None:
            # The run stops with them (every rank finds the same), or collection was
            # interrupted (each rank's items are what it had collected by then).
            return
        with Deadline(self.default_timeout, self.launched.rank, self.stderr):
            self._meet_the_other_ranks_after_collection(session)

    def _meet_the_other_ranks_after_collection(self, session: pytest.Session) -> None:
        """Start the rank session: its first MPI calls are collective (and ``MPI_Init``,
        if the project has not started MPI, waits for every rank with the GIL held, so
        only faulthandler's stack, which names this function, may say why it ended)."""
        from pytest_gpucheck.mpi.rank_session import RankSession

        rank_session = RankSession(self.config, self.launched, self.default_timeout,
                                   stderr=self.stderr)
        self.adopt(self.config, rank_session)
        rank_session.start()  # the bindings, and the backends every rank can use
        rank_session.skip_backends_agreed_away(session.items)
        rank_session.pytest_collection_modifyitems(session.items)

    def _let_go(self) -> None:
        """Not ours: the held output goes out, the guard goes away."""
        if self.held is not None:
            self.held.release()
        stop_guarding(GUARD)
        if not self.stderr.closed:
            self.stderr.close()

    def pytest_unconfigure(self) -> None:
        self.restore_stdout()
        GUARD.remove()
        if not self.ours or not self.decided:
            self._let_go()  # collection never finished (--help, an interrupted run)
