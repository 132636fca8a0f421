"""pytest-gpucheck's pytest hooks: options, selection, parametrization, header, matrix.

Loading this module imports no array framework (a test proves it): backends
are probed only once a run selects them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck import fixtures
from pytest_gpucheck.backends import GPU_BACKENDS
from pytest_gpucheck.environment import (
    CONFTESTS_VARIABLE,
    REPORT_SINK_VARIABLE,
    SIMULATOR_CHILD_VARIABLE,
    apply_jax_memory_policy,
)
from pytest_gpucheck.options import add_options, selected_names
from pytest_gpucheck.reporting import ci
from pytest_gpucheck.reporting.terminal_width import fit, terminal_width
from pytest_gpucheck.run_summary import COV_NOTE, MatrixRecorder, write_summary
from pytest_gpucheck.selection import (
    BACKEND_OUTCOME_MARKERS,
    backend_outcome_marks,
    configure_selection,
    get_selection,
    item_backends,
    parametrize_backends,
)

#: Feature plugins the core registers (each owns its options, markers and hooks).
FEATURE_PLUGINS: tuple[str, ...] = (
    "pytest_gpucheck.bench.plugin",
    "pytest_gpucheck.mpi.plugin",
    "pytest_gpucheck.checking.hypothesis_profiles",
    "pytest_gpucheck.interop.plugin",
    "pytest_gpucheck.multi_device",
    "pytest_gpucheck.sanitizer.plugin",
)

MARKERS = (
    "gpu_backends(*names): run this test only on these backends or groups "
    "(e.g. 'cpu', 'cupy', 'torch-cuda'); other selected backends are not parametrized.",
    "requires_gpu: run this test only on GPU backends; without gpu_backend, skip unless a "
    "CUDA device is visible.",
    "gpu_family(name): the row of the conformance matrix this test counts in "
    "(default: the module name without test_).",
    "gpu_xfail(*names, reason='', strict=xfail_strict, raises=None, run=True): on these "
    "backends or groups, expect this test to fail, as pytest's xfail; other backends run "
    "as usual.",
    "gpu_skip(*names, reason=''): skip this test on these backends or groups, with the "
    "reason; other backends run as usual.",
)

# The fixtures live in their own module; re-exporting them here registers them.
gpu_backend = fixtures.gpu_backend
xp = fixtures.xp
gpu_device = fixtures.gpu_device


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_gpucheck import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    add_options(parser)
    ci.add_options(parser.getgroup("gpucheck"))
    from pytest_gpucheck.processes import add_isolation_options

    add_isolation_options(parser.getgroup("gpucheck"))
    # The feature plugins register here, after the core's options, so `pytest --help`
    # lists --gpu-backends first: a plugin registered now gets this (historic) hook
    # at once, its options after these (registered in pytest_addhooks, they came first).
    # register(import_module) rather than import_plugin: a feature module may be imported
    # already (a test's import), and import_plugin would warn that it cannot rewrite its
    # asserts.
    import importlib

    for name in FEATURE_PLUGINS:
        if not pluginmanager.is_blocked(name) and pluginmanager.get_plugin(name) is None:
            pluginmanager.register(importlib.import_module(name), name)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config,
                                  args: list[str]) -> Generator[None, None, None]:
    """In a child process of this plugin, also load the conftest.py files of its parent.
    A registration error in a conftest.py stops the run in one line. Every run keeps the
    arguments pytest parsed (addopts included): children get theirs from them
    (:mod:`pytest_gpucheck.processes.child_options`)."""
    from pytest_gpucheck.processes import record_args

    record_args(early_config, args)
    line = misspelled_option(early_config, args)
    if line is not None:
        raise pytest.UsageError(line)
    try:
        yield
    except Exception as exc:
        # A registration error in a conftest.py is bad input: one line, exit 4, not
        # pytest's "ImportError while loading conftest" with a frame in the registry.
        # --help still shows the help (pytest then only warns about the conftest).
        from pytest_gpucheck.usage_errors import conftest_line

        line = conftest_line(exc, early_config.rootpath)
        if line is None or early_config.known_args_namespace.help:
            raise
        raise pytest.UsageError(line) from None
    if os.environ.get(CONFTESTS_VARIABLE):
        from pytest_gpucheck.processes import load_parent_conftests

        load_parent_conftests(early_config)


def misspelled_option(config: pytest.Config, args: list[str]) -> str | None:
    """One line naming the option meant, for an unknown ``--gpu-...`` option close to one of
    ours (``--gpu-backend=cpu`` for ``--gpu-backends=cpu``), or None.  pytest parses without
    abbreviations (``allow_abbrev=False``), so it would stop with ``unrecognized arguments:
    --gpu-backend=cpu`` and its usage text, naming no fix."""
    import difflib

    parser = getattr(config, "_parser", None)
    known: set[str] = set()
    for group in [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", ())]:
        for option in getattr(group, "options", ()):
            known.update(name for name in option.names() if name.startswith("--"))
    ours = sorted(name for name in known if name.startswith("--gpu-"))
    if not ours:
        return None
    for arg in args:
        if arg == "--":
            break
        name, equals, value = arg.partition("=")
        if not name.startswith("--gpu") or name in known:
            continue
        close = difflib.get_close_matches(name, ours, n=1, cutoff=0.75)
        if close:
            meant = f"{close[0]}{equals}{value}"
            return f"{name} is not an option; did you mean {close[0]}? ({meant})"
    return None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    # By name: the backends' modules are not imported at configure (loading costs nothing).
    if any(name.startswith("jax-") for name in selected_names(config)):
        # Before the probes and any child process, so simulator children, MPI ranks and
        # probe children inherit it (the JAX backends apply it in-process too).  It
        # cannot be scoped to our items (JAX reads it once): the header says so.
        config.stash[_JAX_MEMORY_SET] = apply_jax_memory_policy()
    configure_selection(config)
    # The child-process machinery is imported only by runs that use it.
    if os.environ.get(REPORT_SINK_VARIABLE):
        from pytest_gpucheck.processes import install_report_sink

        install_report_sink(config)
    config.pluginmanager.register(MatrixRecorder(config), "gpucheck-matrix")
    if config.getoption("gpu_conformance"):
        _add_bundled_suites(config)
    # Before any child starts (xdist workers, isolation workers, the simulator child, MPI
    # ranks): every rerun line, wherever printed, reruns from the user's folder.
    config.stash[_RERUN_BEFORE] = ci.export_rerun_invocation(config)
    # The dispatcher and the core's routers (a feature registers its own router later).
    from pytest_gpucheck.processes import configure_routers

    configure_routers(config)
    if _in_first_process(config):
        _refuse_unreachable_options(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Before the terminal's header and pytest-xdist's workers (both trylast); not at
    # configure, which --help runs too (it would refuse to show the help).
    if _in_first_process(session.config):
        _require_user_implementations(session.config)


def _in_first_process(config: pytest.Config) -> bool:
    """True in the process the user started: not an xdist worker, an isolation or
    simulator child, a benchmark peer or an MPI rank. Usage errors are raised there
    only, once, before any child starts (an xdist worker's would be an INTERNALERROR)."""
    from pytest_gpucheck.environment import launched_rank

    return not (os.environ.get(REPORT_SINK_VARIABLE) or hasattr(config, "workerinput")
                or get_selection(config).in_simulator_child
                or config.getoption("gpu_bench_peer", None) is not None
                or launched_rank() is not None)


def _refuse_unreachable_options(config: pytest.Config) -> None:
    """Exit 4, before collection, on an option that cannot reach the child processes this
    run sends items to (``--pdb`` with isolation workers)."""
    from pytest_gpucheck.processes import REFUSE, check_refused, given_options, rule_for

    if not any(rule_for(name).kind == REFUSE for name, _ in given_options(config)):
        return  # nothing to refuse: no probe of a GPU backend for auto isolation
    from pytest_gpucheck.processes import isolation_mode

    if isolation_mode(config) != "none":
        check_refused(config, "isolation workers (--gpu-isolate)", "--gpu-isolate=none")
    if "numba-cudasim" in get_selection(config).names:
        check_refused(config, "the numba-cudasim child process",
                      "a run without numba-cudasim in --gpu-backends")


def _add_bundled_suites(config: pytest.Config) -> None:
    """Add the suites of the ``pytest_gpucheck.suites`` entry points to the run's arguments."""
    from pytest_gpucheck.registry import load_bundled, suite_folders

    load_bundled()  # a broken third-party entry point stops the run here, in one line
    folders = suite_folders()
    config.stash[ci.ADDED_SUITES_KEY] = tuple(folders)
    for folder in folders:
        if str(folder) not in config.args:
            config.args.append(str(folder))


#: The rerun variable's value before this run exported its own (an outer inline run's).
_RERUN_BEFORE = pytest.StashKey["str | None"]()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RERUN_BEFORE in config.stash:
        ci.restore_rerun_invocation(config, config.stash[_RERUN_BEFORE])


#: The JAX allocator variables this run set for every process in it (header line).
_JAX_MEMORY_SET = pytest.StashKey[dict[str, str]]()


def pytest_report_header(config: pytest.Config) -> list[str]:
    # A probe's reason was up to 117 columns ('cupy is not installed; install it with ...').
    width = terminal_width(config)
    return [part for line in _header_lines(config)
            for part in fit(line, width).splitlines()]


def _header_lines(config: pytest.Config) -> list[str]:
    """The header: one line in a run that selects no backend (the plugin may be installed
    in a project that does not use it, and says no more there), the backends' versions
    and devices when ``--gpu-backends`` selects them.  pytest prints no header under
    ``-q``."""
    selection = get_selection(config)
    if not selection.explicit_option:
        return [DEFAULT_HEADER]
    notes = []
    if config.getoption("cov_source", None):
        notes.append(COV_NOTE)
    memory = config.stash.get(_JAX_MEMORY_SET, {})
    if memory:
        settings = " ".join(f"{key}={value}" for key, value in memory.items())
        notes.append(f"gpucheck: {settings} for the whole run (a JAX backend is selected: "
                     "JAX's first operation would reserve 75% of each GPU beside the other "
                     "frameworks; JAX reads it once per process)")
    lines = [f"gpucheck: backends {selection.spec.text}", *notes]
    if any(name in GPU_BACKENDS for name in selection.names):
        device = selection.device
        lines.append(f"gpucheck: device {device.index} chosen by {device.how}")
    for name, probe in selection.probes.items():
        if probe.available:
            lines.append(f"  {name:<14} {probe.version:<14} {probe.device}")
        else:
            lines.append(f"  {name:<14} skipped: {probe.reason}")
    return lines


#: The header of a run that selects no backend, within 80 columns (one line).
DEFAULT_HEADER = "gpucheck: backends numpy (default; more with --gpu-backends=all)"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "gpu_backend" in metafunc.fixturenames:
        parametrize_backends(metafunc, "gpu_backend")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """Stop the run on the usage errors collection found (malformed markers), all of them
    in one error, before any other plugin acts on the items (a wrapper runs first)."""
    from pytest_gpucheck import usage_errors

    for item in items:
        if any(item.get_closest_marker(name) for name in BACKEND_OUTCOME_MARKERS):
            try:
                marks = backend_outcome_marks(item)
            except pytest.UsageError as exc:
                # Once per test function: its parametrized items carry the same marker
                # (a malformed one printed the same line once per backend).
                usage_errors.add(config, f"{item.nodeid.split('[', 1)[0]}: {exc}")
                continue
            for mark in marks:
                item.add_marker(mark)
    errors = usage_errors.found(config)
    if errors and hasattr(config, "workerinput"):
        usage_errors.hand_to_controller(config, items)
    elif errors:
        from pytest_gpucheck.environment import launched_rank

        rank = launched_rank()
        # Under a launcher every rank finds them; rank 0 prints them (an error without
        # lines prints nothing and still exits 4).
        raise pytest.UsageError(*errors) if rank is None or rank.rank == 0 else pytest.UsageError()
    from pytest_gpucheck.backends.devices import cuda_driver

    for item in items:
        if item.get_closest_marker("requires_gpu") and "gpu_backend" not in getattr(
            item, "fixturenames", ()
        ):
            driver = cuda_driver()
            if not driver.available:
                item.add_marker(pytest.mark.skip(reason=f"requires a GPU: {driver.reason}"))
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: a worker that found usage errors hands them over here."""
    from pytest_gpucheck import usage_errors

    usage_errors.raise_from_worker(node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _backend_scopes(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _backend_scopes(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with _backend_scopes(item):
        return (yield)


def _backend_scopes(item: pytest.Item) -> contextlib.ExitStack:
    """The :meth:`~pytest_gpucheck.backends.base.Backend.item_scope` of each backend the
    item runs on (JAX's 64-bit mode), entered for one test phase: settings our checks
    need never reach a test that runs on no backend of ours."""
    stack = contextlib.ExitStack()
    names = item_backends(item)
    if names:
        selection = get_selection(item.config)
        for name in sorted(names):
            if name in selection.names and selection.probes[name].available:
                stack.enter_context(selection.backend(name).item_scope())
    return stack


#: Fixtures of the plugin whose use means a test runs on (or asks about) our backends;
#: ``xp`` is not listed: ours requests ``gpu_backend``, a project's own does not.
OUR_FIXTURES = frozenset({"gpu_backend", "gpu_device", "gpu_devices", "gpu_benchmark",
                          "mpi_comm", "mpi_rank", "mpi_size"})
#: Markers of the plugin that make an item one of its own: the plugin acts on each.  The
#: ``mpi`` marker counts too, but only in this plugin's shape (its name is shared with
#: pytest-mpi's: :func:`pytest_gpucheck.mpi.marker.is_ours`).
OUR_MARKERS = ("gpu_backends", "requires_gpu", "gpu_family", "gpu_xfail", "gpu_skip",
               "gpu_kernel", "gpu_devices", "gpu_bench")
_OURS_KEY = pytest.StashKey[bool]()


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if not _in_first_process(config):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    width = terminal_width(config)
    if config.getoption("showfixtures", False):
        for line in _own_xp_lines(session):
            reporter.write_line(fit(line, width))
        return
    # Said once, so the header's backends line claims no work that was not done; only
    # where the user selected backends (a project that does not use the plugin hears
    # nothing of it), and not under -q.
    if (get_selection(config).explicit_option and config.get_verbosity() >= 0
            and session.items and not any(uses_the_plugin(item) for item in session.items)):
        reporter.write_line(fit(
            f"gpucheck: no collected test uses gpu_backend, xp, gpu_device or the bundled "
            f"suites: --gpu-backends ({get_selection(config).spec.text}) changes nothing "
            "in this run", width))


def uses_the_plugin(item: pytest.Item) -> bool:
    """Whether ``item`` is one of the plugin's: it runs on a backend (``gpu_backend``, our
    ``xp``, a suite's ``impl``, an interop pair), has a matrix cell, uses one of
    :data:`OUR_FIXTURES` or carries one of :data:`OUR_MARKERS`.  Only a run with such items
    gets the plugin's end-of-run output (matrix, reruns, job summary, annotations)."""
    found = item.stash.get(_OURS_KEY, None)
    if found is None:
        from pytest_gpucheck.fixtures import gets_plugin_fixture
        from pytest_gpucheck.mpi.marker import our_mark
        from pytest_gpucheck.reporting.report import cell_of

        found = (bool(item_backends(item))
                 or gets_plugin_fixture(item, OUR_FIXTURES)  # not a project's namesake
                 or cell_of(item) is not None
                 or any(item.get_closest_marker(name) is not None for name in OUR_MARKERS)
                 or our_mark(item) is not None)
        item.stash[_OURS_KEY] = found
    return found


def _own_xp_lines(session: pytest.Session) -> list[str]:
    """For ``pytest --fixtures``: each project ``xp`` fixture that overrides the plugin's,
    where it is (pytest's ``--fixtures`` lists both, without saying which wins)."""
    # pytest's own --fixtures reads the same table (a private one: pytest >= 8.4 names it
    # _get_all_fixture_defs, before that the _arg2fixturedefs dict).
    manager: Any = session._fixturemanager
    every = getattr(manager, "_get_all_fixture_defs", None)
    definitions = ([d for d in every() if d.argname == "xp"] if every is not None
                   else manager._arg2fixturedefs.get("xp", []))
    lines = []
    for definition in definitions:
        func = definition.func
        if getattr(func, "__module__", "") == fixtures.__name__:
            continue
        code = getattr(func, "__code__", None)
        where = (f"{Path(code.co_filename).name}:{code.co_firstlineno}" if code is not None
                 else str(definition.baseid))
        lines.append(f"gpucheck: the xp fixture of {where} overrides gpucheck's xp for the "
                     f"tests under {definition.baseid or 'the rootdir'}; there gpucheck's "
                     "array namespace is gpu_backend.xp")
    return lines


NO_USER_IMPLEMENTATIONS = (
    "--gpu-impls=user, but no implementation is registered: register one with "
    "@pytest_gpucheck.implements(...) in your project's root conftest.py (one in a test "
    "module or a deeper folder loads too late; see docs/kernels.md), or drop --gpu-impls=user"
)


def _require_user_implementations(config: pytest.Config) -> None:
    """``--gpu-impls=user`` with nothing registered is a usage error, not a green run.

    Checked when the session starts, before its header and before pytest-xdist
    starts its workers, so the user sees one line and exit 4 and nothing else. What
    registers by then counts: the conftest.py files pytest loads before collection
    (those of the folders it is given or of ``testpaths``, their parents, and their
    ``test*`` subfolders), ``-p`` plugins and the implementation entry points. The
    xdist controller never imports test modules or deeper conftest.py files, so a
    registration there cannot count in every run and counts in none (docs/kernels.md).
    """
    if config.getoption("gpu_impls", "all") != "user":
        return
    from pytest_gpucheck.registry import implementations, load_bundled

    load_bundled()  # third-party packages register through the same entry points
    if not implementations(origin="user"):
        raise pytest.UsageError(NO_USER_IMPLEMENTATIONS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not uses_the_plugin(item):
        return report  # a test of the project's own: its report stays pytest's
    from pytest_gpucheck.reporting.report import cell_of

    # Carried to the process that writes the summary (xdist's controller, the parent of
    # a child process): the run has items of the plugin's.
    report.gpucheck_ours = True  # type: ignore[attr-defined]
    cell = cell_of(item)
    if cell is not None:
        report.gpucheck_cell = cell  # type: ignore[attr-defined]
        if call.when == "setup":
            # Written by --junitxml with the teardown report, which shares this list.
            item.user_properties.extend(ci.junit_properties(item, cell))
    if report.failed:
        # Where a CI annotation points: the user's implementation, else the test.
        report.gpucheck_where = ci.blame_location(item)  # type: ignore[attr-defined]
        report.gpucheck_rerun = ci.rerun_target(item)  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(trylast=True)  # after the other plugins' summaries (pytest-benchmark's table)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if get_selection(config).in_simulator_child:
        return
    write_summary(terminalreporter, config)
    from pytest_gpucheck.selection import nothing_could_run

    # Last, where the eye lands: a green run that checked nothing it was asked to.
    line = nothing_could_run(config)
    if line is not None:
        terminalreporter.write_line(fit(line, terminal_width(config)), yellow=True)


__all__ = ["FEATURE_PLUGINS", "SIMULATOR_CHILD_VARIABLE", "gpu_backend", "gpu_device", "xp"]
