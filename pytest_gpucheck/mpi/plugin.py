"""pytest hooks of the MPI feature: options, the ``mpi`` marker, rank fixtures, mode choice.

Under a launcher this process is a rank and a :class:`~.rank_session.RankSession`
runs the marked tests collectively; otherwise a :class:`~.spawn.SpawnRouter`
runs them under the launcher.  Neither this module nor the router imports
``mpi4py``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_gpucheck.environment import (
    RANK_PID_VARIABLE,
    REPORT_SINK_VARIABLE,
    LaunchedRank,
    claim_rank_environment,
    launched_rank,
)
from pytest_gpucheck.mpi.launcher import (
    DEFAULT_LAUNCHER,
    LauncherError,
    find_executable,
    missing_launcher_reason,
    parse_launcher,
)
from pytest_gpucheck.mpi.marker import (
    MARKER_HELP,
    mpi_spec,
    our_mark,
    parse_mpi_mark,
    timeout_problem,
)

LAUNCHER_OPTION = "--gpu-mpi-launcher"
TIMEOUT_OPTION = "--gpu-mpi-timeout"
MAX_RANKS_OPTION = "--gpu-mpi-max-ranks"
DEFAULT_TIMEOUT = 300.0

RANK_SESSION_KEY = pytest.StashKey["Any"]()
TAKEOVER_KEY = pytest.StashKey["Any"]()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("gpucheck")
    group.addoption(
        LAUNCHER_OPTION, dest="gpu_mpi_launcher", default=DEFAULT_LAUNCHER, metavar="COMMAND",
        help="command that starts MPI ranks for spawned mpi tests; {n} is the rank count, "
        "else '-n N' is appended (e.g. 'srun --gpus-per-task=1'). Default: mpiexec",
    )
    group.addoption(
        TIMEOUT_OPTION, dest="gpu_mpi_timeout", default=DEFAULT_TIMEOUT, type=_timeout,
        metavar="SECONDS",
        help="default timeout of an mpi test (the marker's timeout= overrides it); at the "
        f"timeout the hung ranks are reported and the job is aborted. Default: {DEFAULT_TIMEOUT:g}",
    )
    group.addoption(
        MAX_RANKS_OPTION, dest="gpu_mpi_max_ranks", default=None, type=_rank_count,
        metavar="N",
        help="most ranks a spawned job may start (default: SLURM_NTASKS or the CPU count); "
        "mpi tests needing more are skipped",
    )
    pluginmanager.register(_LateConfigure(), "gpucheck-mpi-late-configure")


# argparse types that raise pytest.UsageError: argparse lets it through, and pytest prints
# one line and exits with code 4 (argparse's own 'invalid float value' takes three lines).
def _timeout(text: str) -> float:
    """``--gpu-mpi-timeout``'s value: seconds, > 0 and at most a week."""
    try:
        value: float | None = float(text)
    except ValueError:
        value = None
    problem = timeout_problem(value)
    if problem is not None:
        shown = text if value is None else f"{value:g}"
        raise pytest.UsageError(f"{TIMEOUT_OPTION}={shown}: {problem}, e.g. "
                                f"{TIMEOUT_OPTION}={DEFAULT_TIMEOUT:g}")
    assert value is not None  # timeout_problem(None) names a problem
    return value


def _rank_count(text: str) -> int:
    """``--gpu-mpi-max-ranks``'s value: a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"{MAX_RANKS_OPTION}={text}: use a rank count >= 1, e.g. "
                                f"{MAX_RANKS_OPTION}=4")
    return int(text)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """In a launched rank, guard ``MPI_Abort`` before a ``conftest.py`` can keep a
    reference to ``MPI.COMM_WORLD`` (see :func:`.rank_session.guard_mpi_abort`): in a
    job the plugin spawned now; in a rank the user launched when (if) the project
    imports ``mpi4py.MPI``, and as mpi4py's own until the session proves to be ours
    (:mod:`.takeover`; importing it here would start MPI before the project's
    ``conftest.py`` can set ``mpi4py.rc``)."""
    import importlib.util

    if launched_rank() is None or importlib.util.find_spec("mpi4py") is None:
        return
    if _spawned_by_us():
        from pytest_gpucheck.mpi.rank_session import guard_mpi_abort

        guard_mpi_abort()
    elif not getattr(early_config.known_args_namespace, "numprocesses", None):
        from pytest_gpucheck.mpi.takeover import GUARD

        GUARD.install()


def pytest_gpucheck_child_args(config: pytest.Config) -> list[str]:
    """A child that spawns its own MPI jobs (the simulator child) uses the user's launcher."""
    args = []
    for dest, flag in (
        ("gpu_mpi_launcher", LAUNCHER_OPTION),
        ("gpu_mpi_max_ranks", MAX_RANKS_OPTION),
        ("gpu_mpi_timeout", TIMEOUT_OPTION),
    ):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={value}")
    return args


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Choose the mode; in a rank, bind it to its node-local GPU before the core picks one."""
    config.addinivalue_line("markers", MARKER_HELP)
    timeout = config.getoption("gpu_mpi_timeout")  # checked by _timeout when parsed
    max_ranks = config.getoption("gpu_mpi_max_ranks")
    try:
        launcher = parse_launcher(config.getoption("gpu_mpi_launcher"), max_ranks)
    except LauncherError as exc:
        raise pytest.UsageError(str(exc)) from None
    launched = launched_rank()
    text = config.getoption("gpu_mpi_launcher")
    if (launched is None and text != DEFAULT_LAUNCHER
            and find_executable(launcher.template[0]) is None):
        # Named on purpose: skipping every mpi test would turn a typo into a green run.
        raise pytest.UsageError(
            f"{LAUNCHER_OPTION}={text!r}: {launcher.template[0]!r} is not an executable on "
            "PATH or next to this Python; install it or fix the command")
    if launched is not None:
        import importlib.util

        if importlib.util.find_spec("mpi4py") is not None:
            _configure_rank(config, launched, timeout)
            return
    unusable = missing_launcher_reason(launcher)
    if launched is not None:
        unusable = "this rank cannot run mpi tests: mpi4py is not installed"
    elif _inside_a_rank():
        unusable = "this is a helper process of an MPI rank; mpi tests run in the rank itself"
    config.pluginmanager.register(
        _SpawnRouterLoader(config, launcher, timeout, unusable), "gpucheck-mpi-spawn-loader")


def _configure_rank(config: pytest.Config, launched: LaunchedRank, timeout: float) -> None:
    """A launched rank: a job the plugin spawned is a rank session now; a rank the user
    launched becomes one after collection if the run uses the MPI feature
    (:mod:`.takeover`); the controller of pytest-xdist's workers collects nothing, and
    its workers refuse the feature's tests (:func:`pytest_itemcollected`)."""
    import os

    if _spawned_by_us():
        from pytest_gpucheck.mpi.rank_session import RankSession

        _adopt(config, RankSession(config, launched, timeout))
        return
    from pytest_gpucheck.mpi.takeover import XDIST_CONTROLLER_VARIABLE, LaunchedTakeover

    if config.getoption("numprocesses", None):
        # The workers inherit the launcher's variables: they are helpers of this rank.
        claim_rank_environment()
        os.environ[XDIST_CONTROLLER_VARIABLE] = str(os.getpid())
        return
    takeover = LaunchedTakeover(config, launched, timeout, _adopt)
    config.stash[TAKEOVER_KEY] = takeover
    config.pluginmanager.register(takeover, "gpucheck-mpi-takeover")


def _adopt(config: pytest.Config, session: Any) -> None:
    """Make ``session`` (a ``RankSession``) this rank's: its hooks and the fixtures' one."""
    config.stash[RANK_SESSION_KEY] = session
    config.pluginmanager.register(session, "gpucheck-mpi-rank")


def _spawned_by_us() -> bool:
    """This process is a rank of a job the plugin spawned (``mpi/spawn.py``)."""
    import os

    return bool(os.environ.get(REPORT_SINK_VARIABLE))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Check the item's ``mpi`` marker as it is collected: a malformed one is kept as a
    usage error, reported with every other one at the end of collection (see
    :mod:`pytest_gpucheck.usage_errors`), once per test function, not per parameter.
    In a pytest-xdist worker of a launched rank, a test of the MPI feature is one:
    the launcher refusal (:func:`.rank_session.launcher_refusal`)."""
    if _launched_with_workers(item.config):
        from pytest_gpucheck.mpi.takeover import uses_our_mpi

        if uses_our_mpi(item):
            from pytest_gpucheck import usage_errors
            from pytest_gpucheck.mpi.rank_session import XDIST_REFUSAL

            usage_errors.add(item.config, XDIST_REFUSAL)
    mark = our_mark(item)
    if mark is None:
        return
    function = getattr(item, "originalname", item.name)
    nodeid = f"{item.parent.nodeid}::{function}" if item.parent is not None else item.nodeid
    try:
        parse_mpi_mark(mark, nodeid)
    except pytest.UsageError as exc:
        from pytest_gpucheck import usage_errors

        usage_errors.add(item.config, str(exc))


class _SpawnRouterLoader:
    """Registers the spawn router once collection finds an ``mpi`` test.

    Runs without one never import the child-process machinery, so the plugin
    costs a plain ``pytest`` nothing.
    """

    def __init__(self, config: pytest.Config, *router_args: Any) -> None:
        self.config = config
        self.router_args = router_args
        self.worker_deaths: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist (controller, which collects nothing and has no router): keep the
        MPI jobs that died on a worker after their last test."""
        self.worker_deaths.extend((getattr(node, "workeroutput", None) or {}).get(
            "gpucheck_mpi_job_deaths", []))  # spawn.JOB_DEATHS_OUTPUT (not imported here)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker_deaths and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.worker_deaths:
            terminalreporter.write_line(f"gpucheck: {line}", red=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.config.pluginmanager.has_plugin("gpucheck-mpi-spawn"):
            return
        if not any(mpi_spec(item) is not None for item in items):
            return
        from pytest_gpucheck.mpi.spawn import SpawnRouter

        router = SpawnRouter(self.config, *self.router_args)
        router.pytest_collection_modifyitems(items)
        self.config.pluginmanager.register(router, "gpucheck-mpi-spawn")


def _launched_with_workers(config: pytest.Config) -> bool:
    """In a pytest-xdist worker whose controller is a rank the user launched."""
    import os

    if not os.environ.get("PYTEST_GPUCHECK_MPI_XDIST_CONTROLLER"):
        return False  # takeover.XDIST_CONTROLLER_VARIABLE: the module is not loaded here
    from pytest_gpucheck.mpi.takeover import xdist_worker_of_a_rank

    return xdist_worker_of_a_rank(config)


def _inside_a_rank() -> bool:
    import os

    return bool(os.environ.get(RANK_PID_VARIABLE))


class _LateConfigure:
    """Runs after every other ``pytest_configure`` (the terminal reporter exists by then)."""

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        session = config.stash.get(RANK_SESSION_KEY, None)
        if session is not None:
            session.restore_stdout()
        takeover = config.stash.get(TAKEOVER_KEY, None)
        if takeover is not None:
            takeover.restore_stdout()


def _rank_session(request: pytest.FixtureRequest) -> Any:
    session = request.config.stash.get(RANK_SESSION_KEY, None)
    if session is None:
        if mpi_spec(request.node) is None:
            pytest.fail(
                f"{request.fixturename} needs MPI ranks: mark the test "
                "@pytest.mark.mpi(ranks=N), or run pytest under mpiexec", pytrace=False)
        pytest.fail(f"{request.fixturename}: this process is not an MPI rank", pytrace=False)
    return session


@pytest.fixture
def mpi_comm(request: pytest.FixtureRequest) -> Generator[Any, None, None]:
    """A private duplicate of ``MPI.COMM_WORLD`` for this test, freed after it.

    A duplicate, so messages a failed test leaves unmatched cannot be received
    by the next test.  Creating it is collective: every rank runs the test.
    """
    comm = _rank_session(request).guarded_world.Dup()
    yield comm
    comm.Free()


@pytest.fixture
def mpi_rank(request: pytest.FixtureRequest) -> int:
    """This process's rank in ``COMM_WORLD``."""
    return int(_rank_session(request).rank)


@pytest.fixture
def mpi_size(request: pytest.FixtureRequest) -> int:
    """The number of ranks in ``COMM_WORLD``."""
    return int(_rank_session(request).size)


@pytest.fixture(params=["direct", "staged"])
def mpi_transport(request: pytest.FixtureRequest, gpu_backend: Any, mpi_comm: Any) -> Any:
    """How device arrays reach MPI in this test: ``direct`` or ``staged`` through the host.

    ``direct`` is skipped, with the reason, where the backend's arrays cannot be
    handed to MPI: immutable JAX arrays, or a GPU whose MPI failed the
    device-buffer probe (run once, by rank 0, in a child process).
    """
    from pytest_gpucheck.mpi.device_ops import ops_for
    from pytest_gpucheck.mpi.transport import DirectTransport, StagedTransport

    if request.param == "staged":
        return StagedTransport()
    ops = ops_for(gpu_backend)
    if not ops.receives_in_place:
        pytest.skip(f"{gpu_backend.name} arrays are immutable: MPI cannot receive into them "
                    "(the staged transport is tested instead)")
    if gpu_backend.is_gpu:
        from pytest_gpucheck.mpi.gpu_aware import gpu_aware

        verdict = (gpu_aware(gpu_backend.name, gpu_backend.device_index)
                   if mpi_comm.Get_rank() == 0 else None)
        verdict = mpi_comm.bcast(verdict, root=0)
        if not verdict.supported:
            pytest.skip(f"MPI is not GPU-aware for {gpu_backend.name} here: {verdict.detail}")
    return DirectTransport()
