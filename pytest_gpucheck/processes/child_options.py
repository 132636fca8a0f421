"""What a child process is given: its command line (every option a run can have, and what a
child gets of it) and the environment entries that come with it.

Items run in child processes (isolation workers, the simulator child, MPI
ranks), so an option the user gave must reach the children that need it, or
be refused: an option silently dropped on the way once let the regression
gate pass an 8x slowdown in every isolation worker.  Each option is one of

- ``forward``: given to every child as the user wrote it (the child runs,
  measures or builds its reports with it);
- ``parent``: acts in this process only, on the replayed reports or before
  any item runs (selection, reporting, the terminal);
- ``plugin``: the plugin sets it for the child itself (paths made absolute,
  one backend per worker, ``--gpu-isolate=none``);
- ``refuse``: cannot reach a child: when this run sends items to one, the
  run stops before collection with one line and exit code 4.

The table covers pytest's own options, pytest-benchmark's, hypothesis',
pytest-xdist's and this plugin's (``tests/processes/test_child_options.py`` enumerates
a real run's parser and fails on any option missing here).  An option of
another plugin or of a ``conftest.py`` is forwarded: the child loads the same
plugins and conftests, and such options usually change how tests run
(``--runslow``).

The child's tokens are the user's own: the arguments this process parsed
(``PYTEST_ADDOPTS``, the ini file's ``addopts``, the command line) are parsed
again by a copy of pytest's parser that records which option each token set,
so a value passes unchanged, whatever type the option converts it to.  The
child is told to skip the ini file's ``addopts`` (``-o addopts=``): they
reach it through this table like the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_gpucheck.environment import (
    CONFTESTS_VARIABLE,
    JUNIT_VARIABLE,
    PARENT_VARIABLE,
    REPORT_SINK_VARIABLE,
    SERVE_VARIABLE,
    STREAM_VARIABLE,
)

FORWARD = "forward"
PARENT = "parent"
PLUGIN = "plugin"
REFUSE = "refuse"

#: Every argument this process parsed (ini addopts and ``PYTEST_ADDOPTS`` included).
ARGS_KEY: pytest.StashKey[list[str]] = pytest.StashKey()


@dataclass(frozen=True)
class Rule:
    """What a child gets of one option, and why."""

    kind: str
    why: str


def _rules(kind: str, why: str, *names: str) -> dict[str, Rule]:
    return dict.fromkeys(names, Rule(kind, why))


_PDB = "the debugger would stop in a worker process, which has no terminal"

#: Options by their first long name (``-s`` and ``-d``, which have none, by their short one).
OPTIONS: dict[str, Rule] = {
    # -- pytest: how a test runs and what its report holds (made in the child) --------
    **_rules(FORWARD, "the child runs the test and captures its output", "--capture", "-s"),
    **_rules(FORWARD, "the child builds the failure's traceback and assertion message",
             "--verbose", "--quiet", "--verbosity", "--showlocals", "--no-showlocals", "--tb",
             "--fulltrace", "--xfail-tb", "--assert"),
    **_rules(FORWARD, "the child raises and filters the warnings of its tests",
             "--pythonwarnings"),
    **_rules(FORWARD, "the child reads the same ini file and checks the same markers",
             "--strict-config", "--strict-markers", "--strict", "--override-ini"),
    **_rules(FORWARD, "the child runs xfail tests", "--runxfail"),
    **_rules(FORWARD, "the child sets up the fixtures (and shows or plans them)",
             "--setuponly", "--setupshow", "--setupplan"),
    **_rules(FORWARD, "the child collects its targets the same way", "--confcutdir",
             "--noconftest", "--import-mode", "--keepduplicates", "--collect-in-virtualenv",
             "--continue-on-collection-errors", "--doctest-modules", "--doctest-glob",
             "--doctest-report", "--doctest-ignore-import-errors",
             "--doctest-continue-on-failure", "--disable-plugin-autoload"),
    **_rules(FORWARD, "the child captures its tests' log records", "--log-level",
             "--log-format", "--log-date-format", "--log-cli-level", "--log-cli-format",
             "--log-cli-date-format", "--log-auto-indent", "--log-disable", "--log-file-mode",
             "--log-file-level", "--log-file-format", "--log-file-date-format"),
    "--log-file": Rule(REFUSE, "the log records of tests run in a child process would not "
                       "reach the file"),
    **_rules(REFUSE, _PDB, "--pdb", "--pdbcls", "--trace"),
    # -- pytest: selection, ordering and stopping are decided here ----------------------
    **_rules(PARENT, "items are selected here; the child runs the ones it is sent", "-k",
             "-m", "--deselect", "--ignore", "--ignore-glob", "--pyargs", "--lf",
             "--ff", "--nf", "--lfnf", "--sw", "--sw-skip", "--sw-reset", "--cache-clear"),
    **_rules(PARENT, "the session stops here, on the replayed failure", "--exitfirst",
             "--maxfail"),
    **_rules(PARENT, "no test runs", "--markers", "--fixtures", "--fixtures-per-test",
             "--collectonly", "--cache-show", "--version", "--help"),
    **_rules(PARENT, "the terminal, the JUnit file and the summary are written here, from the "
             "replayed reports", "--durations", "--durations-min", "--no-header",
             "--no-summary", "--no-fold-skipped", "--force-short-summary", "--report-chars",
             "--disable-warnings", "--max-warnings", "--show-capture", "--color",
             "--code-highlight", "--pastebin", "--junitxml", "--junitprefix"),
    **_rules(PARENT, "diagnostics of this process", "--traceconfig", "--debug"),
    "--basetemp": Rule(PARENT, "pytest empties the folder at start, so a child given it would "
                       "delete this session's temporary files; a child uses its own"),
    **_rules(PLUGIN, "the child is started in the rootdir with the same ini file and plugins",
             "--config-file", "--rootdir", "-p"),
    # -- pytest-benchmark ----------------------------------------------------------------
    **_rules(FORWARD, "the child measures the benchmarks", "--benchmark-min-time",
             "--benchmark-max-time", "--benchmark-min-rounds", "--benchmark-precision",
             "--benchmark-confidence", "--benchmark-timer", "--benchmark-calibration-precision",
             "--benchmark-warmup", "--benchmark-warmup-iterations", "--benchmark-disable-gc",
             "--benchmark-skip", "--benchmark-disable", "--benchmark-enable", "--benchmark-only",
             "--benchmark-cprofile", "--benchmark-cprofile-loops", "--benchmark-cprofile-top",
             "--benchmark-verbose", "--benchmark-quiet"),
    **_rules(PARENT, "each child hands its benchmarks to this process (bench.relay), where "
             "pytest-benchmark saves, compares and shows them", "--benchmark-save",
             "--benchmark-autosave", "--benchmark-json", "--benchmark-compare",
             "--benchmark-compare-fail", "--benchmark-histogram"),
    **_rules(PARENT, "shapes pytest-benchmark's table and storage, written here",
             "--benchmark-save-data", "--benchmark-storage", "--benchmark-netrc",
             "--benchmark-sort", "--benchmark-group-by", "--benchmark-columns",
             "--benchmark-name", "--benchmark-time-unit"),
    "--benchmark-cprofile-dump": Rule(PLUGIN, "the child profiles the test and writes the "
                                      "dump: forwarded by the benchmark feature, its path "
                                      "made absolute"),
    # -- hypothesis ----------------------------------------------------------------------
    **_rules(FORWARD, "the child runs the property tests", "--hypothesis-verbosity",
             "--hypothesis-show-statistics", "--hypothesis-explain"),
    **_rules(PLUGIN, "forwarded by value (forwarded_options)", "--hypothesis-profile",
             "--hypothesis-seed"),
    # -- pytest-xdist: this process distributes, a child runs serially (-n0) ------------
    **_rules(PARENT, "pytest-xdist distributes the items here; a child runs serially (-n0)",
             "--numprocesses", "--maxprocesses", "--max-worker-restart", "--dist",
             "--loadscope-reorder", "--no-loadscope-reorder", "--tx", "--px", "-d",
             "--rsyncdir", "--rsyncignore", "--testrunuid", "--maxschedchunk", "--looponfail"),
    # -- pytest-gpucheck -----------------------------------------------------------------
    **_rules(PLUGIN, "forwarded by the benchmark feature (paths made absolute)",
             "--gpu-bench-baseline", "--gpu-bench-save", "--gpu-bench-compare",
             "--gpu-bench-against", "--gpu-bench-l2-flush", "--gpu-bench-family-level",
             "--gpu-bench-compare-fails", "--gpu-bench-cross-mode", "--gpu-bench-budget",
             "--gpu-bench-pin"),
    **_rules(PLUGIN, "forwarded by the MPI feature", "--gpu-mpi-launcher", "--gpu-mpi-timeout",
             "--gpu-mpi-max-ranks"),
    **_rules(PLUGIN, "set per child: its backends, --gpu-isolate=none, the device and the "
             "implementations by value", "--gpu-backends", "--gpu-isolate", "--gpu-device",
             "--gpu-impls"),
    **_rules(PLUGIN, "the baseline checkout's own process, started by --gpu-bench-against",
             "--gpu-bench-peer"),
    **_rules(PLUGIN, "the parent starts each sanitized worker under compute-sanitizer; the "
             "worker learns its tool from its environment", "--gpu-sanitize"),
    **_rules(FORWARD, "JAX in the child must present as many host devices",
             "--gpu-host-devices"),
    **_rules(PARENT, "the report, the plot and the checks of the whole run are made here",
             "--gpu-bench-plot", "--gpu-require", "--gpu-report", "--gpu-summary",
             "--gpu-annotations"),
    "--gpu-conformance": Rule(PARENT, "the child gets the suites' items as targets"),
    "--gpu-bench-inconclusive": Rule(PARENT, "the benchmarks are judged as one family at the "
                                     "run's end here, which decides whether an undecided one "
                                     "fails the run"),
}

#: The rule of an option this table does not name (another plugin's, a conftest's).
UNKNOWN = Rule(FORWARD, "an option of another plugin or a conftest.py: the child loads the "
               "same plugins and conftests")


#: Options a later pytest gave a long name, keyed by it on every release: pytest before
#: 9.1 (8.2 is the lowest declared) names ``-r`` only, and its ``-rA`` would otherwise
#: be an unknown option forwarded to the child.
LONG_NAMES = {"-r": "--report-chars"}


def option_name(option_strings: Sequence[str]) -> str:
    """The table's key of an option: its first long name, else its first name."""
    long = next((name for name in option_strings if name.startswith("--")), None)
    return long or LONG_NAMES.get(option_strings[0], option_strings[0])


def rule_for(name: str) -> Rule:
    return OPTIONS.get(name, UNKNOWN)


def parser_options(config: pytest.Config) -> list[str]:
    """The names (table keys) of every option this run's parser knows."""
    return [option_name(action.option_strings) for action in _actions(config)]


def _actions(config: pytest.Config) -> list[argparse.Action]:
    # The argparse parser pytest built from every option (Parser.optparser, there since
    # the parse that preceded pytest_configure) holds each option's action.  Not the
    # Argument objects: pytest 8.2, our lower bound, keeps no action on them (the
    # main job stopped with an INTERNALERROR there), and its groups leave out the
    # options added without a group.
    optparser: argparse.ArgumentParser = config._parser.optparser
    return [action for action in optparser._actions if action.option_strings]


_NO_VALUE = object()


class _Recorder(argparse.Action):
    """Records the option (by table key) and the raw tokens that set it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        assert option_string is not None
        tokens = [option_string]
        if values is _NO_VALUE or values is None:
            pass
        elif isinstance(values, list):
            tokens += [str(v) for v in values]
        else:
            tokens = [f"{option_string}={values}" if option_string.startswith("--")
                      else f"{option_string}{values}"]
        namespace.recorded.append((self.dest, tokens))


def given_options(config: pytest.Config) -> list[tuple[str, list[str]]]:
    """(option name, its tokens) for every option in the arguments this run parsed, in
    order; positional arguments are left out."""
    args = config.stash.get(ARGS_KEY, None)
    if args is None:
        args = [str(a) for a in config.invocation_params.args]
    recorder = argparse.ArgumentParser(add_help=False, allow_abbrev=False,
                                       fromfile_prefix_chars="@")
    for action in _actions(config):
        nargs = action.nargs
        recorder.add_argument(*action.option_strings, action=_Recorder,
                              dest=option_name(action.option_strings),
                              nargs=nargs, const=_NO_VALUE if nargs == "?" else None,
                              default=argparse.SUPPRESS)
    namespace = argparse.Namespace(recorded=[])
    try:
        recorder.parse_known_args(args, namespace)
    except SystemExit:  # pytest accepted these arguments; a surprise costs no verdict
        return []
    return list(namespace.recorded)


def child_options(config: pytest.Config) -> list[str]:
    """The tokens of every given option a child gets as given (``forward``)."""
    return [token for name, tokens in given_options(config)
            if rule_for(name).kind == FORWARD for token in tokens]


def check_refused(config: pytest.Config, where: str, fix: str) -> None:
    """Stop the run (exit 4, one line) on the first given option that cannot reach a
    child, when this run sends items to ``where``."""
    for name, tokens in given_options(config):
        rule = rule_for(name)
        if rule.kind == REFUSE:
            flag = tokens[0].split("=", 1)[0]
            raise pytest.UsageError(f"{flag} needs {fix}: {rule.why}; this run sends items "
                                    f"to {where}")


def record_args(config: pytest.Config, args: Sequence[str | os.PathLike[str]]) -> None:
    """Keep the arguments pytest parsed (from ``pytest_load_initial_conftests``)."""
    config.stash[ARGS_KEY] = [os.fspath(arg) for arg in args]


# -- the child's command line and environment, from the table above ------------------
def forwarded_options(config: pytest.Config) -> list[str]:
    """Options of this run that a child must share to collect and run the same items.

    The core's own options are listed here; each feature plugin adds its own
    through the ``pytest_gpucheck_child_args`` hook (:mod:`pytest_gpucheck.hookspecs`);
    every other option the user gave is forwarded or not by the table of
    :mod:`pytest_gpucheck.processes.child_options`.  The child skips the ini file's ``addopts``:
    they reach it through that table like the command line's.
    """
    args = ["-o", "addopts=", *child_options(config), "--rootdir", str(config.rootpath)]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        args.append("-n0")  # the parent already distributes; the child runs serially
    args.append("--gpu-isolate=none")  # a child is the isolation: it never starts workers
    for dest, flag in (
        ("hypothesis_profile", "--hypothesis-profile"),
        ("hypothesis_seed", "--hypothesis-seed"),
        ("gpu_device", "--gpu-device"),
        ("gpu_impls", "--gpu-impls"),
    ):
        value = config.getoption(dest, None)
        if value is not None:
            args.append(f"{flag}={value}")
    for feature_args in config.hook.pytest_gpucheck_child_args(config=config):
        args += feature_args
    return args


def stop_options(config: pytest.Config, session: pytest.Session | None) -> list[str]:
    """``--maxfail`` for a child that runs a batch of items: it stops after the failures
    this session may still have, so no item starts after the one that ends the run
    (a long-lived worker needs none: it runs only what it is sent)."""
    maxfail = int(config.getoption("maxfail", 0) or 0)
    if not maxfail:
        return []
    failed = session.testsfailed if session is not None else 0
    return [f"--maxfail={max(1, maxfail - failed)}"]


def backends_option(config: pytest.Config, names: Sequence[str] = ()) -> list[str]:
    """The child's ``--gpu-backends`` argument: ``names`` when given (a child that runs
    one backend's items), else this run's own option as the user wrote it (none if unset)."""
    if names:
        return [f"--gpu-backends={','.join(names)}"]
    value = config.getoption("gpu_backends", None)
    return [] if value is None else [f"--gpu-backends={value}"]


def plugin_options(config: pytest.Config) -> list[str]:
    """``-p`` options of this run; they must be on the child's real command line,
    because pytest reads them before it expands an ``@argsfile``."""
    options = ["-p", "no:cacheprovider"]
    # Every argument parsed, the ini file's addopts included (the child skips those).
    parsed = config.stash.get(ARGS_KEY, None) or [str(a) for a in config.invocation_params.args]
    for plugin in _explicit_plugins(parsed):
        options += ["-p", plugin]
    return options


def _explicit_plugins(args: Iterable[str]) -> list[str]:
    plugins, pending = [], False
    for arg in args:
        if pending:
            plugins.append(arg)
            pending = False
        elif arg == "-p":
            pending = True
        elif arg.startswith("-p") and len(arg) > 2:
            plugins.append(arg[2:])
    # "no:NAME" too: a plugin the user turned off must stay off in the children that
    # run the user's items (it came back there, and with it its hooks and imports).
    return plugins


def loaded_conftests(config: pytest.Config) -> list[str]:
    """Absolute paths of the ``conftest.py`` modules registered in this session."""
    return [
        name
        for name, plugin in config.pluginmanager.list_name_plugin()
        if isinstance(name, str)
        and os.path.basename(name) == "conftest.py"
        and os.path.isabs(name)
        and getattr(plugin, "__file__", None) is not None
    ]


def junit_env(config: pytest.Config) -> dict[str, str]:
    """A child's environment entry that says this run writes a junit file (see
    :data:`~pytest_gpucheck.environment.JUNIT_VARIABLE`); empty when it does not."""
    from _pytest.junitxml import xml_key  # private: where pytest keeps its LogXML

    xml = config.stash.get(xml_key, None)
    family = getattr(xml, "family", None)
    return {JUNIT_VARIABLE: str(family)} if family else {}


def hypothesis_env(config: pytest.Config) -> dict[str, str]:
    """A child's hypothesis example database: the one of the folder the user ran pytest in
    (hypothesis keeps it under the working folder, and a child runs in the rootdir), so
    an example a failure saved is replayed by the rerun in every process mode.  Empty
    when the environment already names one."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return {}
    return {"HYPOTHESIS_STORAGE_DIRECTORY": str(config.invocation_params.dir / ".hypothesis")}


_MPI_STREAM_NOTED = pytest.StashKey[bool]()


def child_environment(config: pytest.Config, env: Mapping[str, str] | None,
                      stream_env: Mapping[str, str], sink: str) -> dict[str, str]:
    """A child pytest's environment (a batch child's, a long-lived worker's): this
    process's with ``env`` added, the live output's (``stream_env``, from
    :func:`output_stream`), the JUnit file's and hypothesis' entries, the report
    ``sink``, the parent and its conftests; without what would make it an xdist worker,
    read the user's ``PYTEST_ADDOPTS`` twice (its options come in the arguments) or serve
    this process's pipes (a worker is given its own)."""
    child_env = {
        **os.environ,
        **(env or {}),
        **stream_env,
        **junit_env(config),
        **hypothesis_env(config),
        REPORT_SINK_VARIABLE: sink,
        PARENT_VARIABLE: f"{os.getpid()}@{socket.gethostname()}",
        CONFTESTS_VARIABLE: json.dumps(loaded_conftests(config)),
    }
    child_env.pop("PYTEST_XDIST_WORKER", None)
    child_env.pop("PYTEST_ADDOPTS", None)
    child_env.pop(SERVE_VARIABLE, None)  # a worker's pipes are its own, not its jobs'
    if not stream_env:
        child_env.pop(STREAM_VARIABLE, None)
    if not junit_env(config):
        child_env.pop(JUNIT_VARIABLE, None)
    return child_env


def streaming(config: pytest.Config) -> bool:
    """Whether this run shows what tests print as they print it (``-s``)."""
    return config.getoption("capture", "fd") == "no"


@contextlib.contextmanager
def output_stream(config: pytest.Config, launcher: Sequence[str] = ()
                  ) -> Generator[tuple[dict[str, str], list[int], list[str]], None, None]:
    """For a child about to start: the environment, descriptors to pass and arguments that
    stream its tests' output to this process's terminal under ``-s`` (nothing otherwise).

    Under a launcher the ranks' descriptors are the launcher's, so nothing streams: the
    ranks capture as usual and their output is in each test's report sections.
    """
    if not streaming(config) or launcher:
        if streaming(config) and not config.stash.get(_MPI_STREAM_NOTED, False):
            config.stash[_MPI_STREAM_NOTED] = True
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    "gpucheck: -s does not stream what MPI ranks print (the launcher owns "
                    "their output): it is in each test's captured sections (-rA shows them)")
        # The user's -s reaches every child through the option table; ranks capture anyway,
        # or what they print would be lost in the launcher's output.
        yield {}, [], ["--capture=fd"] if streaming(config) else []
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()  # what this process wrote comes before what the child writes
    fds = [os.dup(1), os.dup(2)]
    try:
        yield {STREAM_VARIABLE: f"{fds[0]},{fds[1]}"}, fds, ["--capture=no"]
    finally:
        for fd in fds:
            os.close(fd)  # the child has its copies
