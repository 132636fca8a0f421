"""The one rule that selects a failed item again, and what the user's command adds to it.

A failure's ``rerun:`` line (the conformance harness's, the report's rerun column, a CI
annotation) must rerun from the folder the user ran pytest in, whichever process ran
the item: this process, a pytest-xdist worker, an isolation worker, the
``numba-cudasim`` child or an MPI rank.  The process the user started reads its own
command (:func:`rerun_invocation`) and hands it to every process under it in the
environment (:data:`pytest_gpucheck.environment.RERUN_VARIABLE`); each line is built
from that, never from the child's own command line (absolute paths, its rootdir).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: The folders of the suites ``--gpu-conformance`` adds to the run (the ``pytest_gpucheck.suites``
#: entry points; set by the plugin): files under them are not the user's, so a node id cannot
#: select one alone.
ADDED_SUITES_KEY = pytest.StashKey[tuple[Path, ...]]()


def named_paths(config: pytest.Config, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """The paths the user named on the command line (node ids and ``exclude`` left out);
    none when pytest took its arguments from ``testpaths`` or the current folder."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return []
    return [arg for arg in config.args if "::" not in arg and arg not in exclude]


def rerun_selector(item_path: Path, name: str, *, invocation_dir: str | Path,
                   named: list[str] | tuple[str, ...],
                   added: tuple[Path, ...] = ()) -> tuple[str, ...]:
    """The arguments that select exactly one item again from the folder pytest ran in: the
    one rule behind the conformance harness's ``rerun:`` line, the report's rerun column and
    the CI annotation.

    A file under a folder of ``added`` (the suites, which ``--gpu-conformance`` adds to every
    run) cannot be selected by its node id, which would run the whole suite: ``-k`` with the
    full item name (the brackets keep ``test_sum[`` from matching ``test_sum_of_squares[``)
    selects it instead, next to the paths the user ``named`` (their conftest.py files come
    with them).  Otherwise the file's path (relative to ``invocation_dir`` when inside it)
    and ``name``, the node id's part after the file (``TestClass::test_x[numpy]``).

    >>> rerun_selector(Path("/p/tests/test_a.py"), "test_x[numpy]", invocation_dir="/p",
    ...                named=[])
    ('tests/test_a.py::test_x[numpy]',)
    >>> rerun_selector(Path("/site/conformance/test_b.py"), "test_y[numpy:mine]",
    ...                invocation_dir="/p", named=["tests"], added=(Path("/site/conformance"),))
    ('tests', '-k', 'test_y[numpy:mine]')
    """
    if any(folder in item_path.parents for folder in added):
        return (*named, "-k", name.rsplit("::", 1)[-1])
    try:
        path = str(item_path.relative_to(invocation_dir))
    except ValueError:
        path = str(item_path)
    return (f"{path}::{name}",)


def rerun_target(item: pytest.Item) -> list[str]:
    """What selects ``item`` again from the user's folder (:func:`rerun_selector` applied
    to :func:`rerun_invocation`, the command the user typed, in whichever process the
    item ran)."""
    invocation = rerun_invocation(item.config)
    within_file = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return list(rerun_selector(Path(item.path), within_file,
                               invocation_dir=invocation["dir"], named=invocation["paths"],
                               added=tuple(Path(folder) for folder in invocation["added"])))


def stable_nodeid(item: pytest.Item) -> str:
    """``item``'s node id as the process the user started names it, the same in every
    process of the run: what the conformance suites derive a seed and a database key from.

    A child selects an item by its file's absolute path (``wire.child_target``), so a
    file outside the rootdir (a bundled suite under ``--gpu-conformance``) gets another
    node id there (``::test_sum[numba-cpu:mine]`` where the user's process has
    ``test_reductions.py::test_sum[numba-cpu:mine]``): a seed hashed from it made the
    derandomized ``ci`` profile draw other examples in an isolation worker than in-process.
    Here: the path relative to the added suite folder that holds it, else to the rootdir
    (every child gets ``--rootdir``), else the absolute path, then the part after the file.
    """
    invocation = rerun_invocation(item.config)
    path = Path(item.path)
    within_file = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    for base in (*(Path(folder) for folder in invocation["added"]),
                 Path(item.config.rootpath)):
        if base in path.parents:
            return f"{path.relative_to(base).as_posix()}::{within_file}"
    return f"{path.as_posix()}::{within_file}"


#: The user's options a rerun keeps as given (each takes a value): plugins, the ini file
#: and rootdir (which conftest.py files and settings load), ini overrides and warning
#: filters (a warning made an error is an outcome).  ``-p no:NAME`` is left out.
_KEPT_WITH_VALUE = ("-p", "--rootdir", "-c", "--config-file", "-o", "--override-ini", "-W",
                    "--pythonwarnings", "--confcutdir", "--import-mode")
_INVOCATION_KEY = pytest.StashKey[dict[str, Any]]()


def _is_child(config: pytest.Config) -> bool:
    """A process the user's run started (an xdist worker, an isolation worker, the
    simulator child, an MPI rank spawned by the plugin): it reruns from the user's
    command, which the process the user started hands down (:data:`RERUN_VARIABLE`)."""
    from pytest_gpucheck.environment import REPORT_SINK_VARIABLE

    return bool(os.environ.get(REPORT_SINK_VARIABLE)) or hasattr(config, "workerinput")


def rerun_invocation(config: pytest.Config) -> dict[str, Any]:
    """What the command the user typed contributes to a rerun, in every process of the run:
    ``dir`` (the folder it ran in), ``paths`` (the paths it named, the added suites left
    out), ``added`` (the suite folders ``--gpu-conformance`` added), ``options`` (the
    options that decide which items exist and how they run: ``-p``, ``--rootdir``,
    ``-c``, ``-o``, ``-W``, ``--gpu-conformance``, ``--gpu-impls``, an explicit
    ``--gpu-isolate``) and ``hypothesis`` (``--hypothesis-profile`` and
    ``--hypothesis-seed`` as given).  A child reads the one its first process exported
    (:func:`export_rerun_invocation`); JSON, so it travels in the environment."""
    import json

    from pytest_gpucheck.environment import RERUN_VARIABLE

    if _INVOCATION_KEY in config.stash:
        return config.stash[_INVOCATION_KEY]
    inherited = os.environ.get(RERUN_VARIABLE)
    if inherited and _is_child(config):
        invocation: dict[str, Any] = json.loads(inherited)
    else:
        invocation = _own_invocation(config)
    config.stash[_INVOCATION_KEY] = invocation
    return invocation


def _own_invocation(config: pytest.Config) -> dict[str, Any]:
    params = config.invocation_params
    options: list[str] = []
    args = [str(arg) for arg in params.args]
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else None
        if arg in _KEPT_WITH_VALUE and following is not None:
            if not (arg == "-p" and following.startswith("no:")):
                options += [arg, following]
        elif arg.startswith(tuple(f"{flag}=" for flag in _KEPT_WITH_VALUE if
                                  flag.startswith("--"))) or (
                arg[:2] in ("-p", "-c", "-o", "-W") and len(arg) > 2
                and not arg[2:].startswith("no:")):
            options.append(arg)
    if config.getoption("gpu_conformance", False):
        options.append("--gpu-conformance")
    impls = config.getoption("gpu_impls", "all")
    if impls != "all":
        options.append(f"--gpu-impls={impls}")
    # An explicit mode decides where the item runs (a crash is one failed test or the end
    # of the run); auto resolves the same way again on the same machine.
    isolate = config.getoption("gpu_isolate", "auto")
    if isolate and isolate != "auto":
        options.append(f"--gpu-isolate={isolate}")
    hypothesis = []
    profile = config.getoption("hypothesis_profile", None)
    if profile:
        hypothesis.append(f"--hypothesis-profile={profile}")
    seed = config.getoption("hypothesis_seed", None)
    if seed is not None:
        hypothesis.append(f"--hypothesis-seed={seed}")
    added = config.stash.get(ADDED_SUITES_KEY, ())
    return {"dir": str(params.dir), "options": options, "hypothesis": hypothesis,
            "paths": named_paths(config, exclude=tuple(str(folder) for folder in added)),
            "added": [str(folder) for folder in added]}


def export_rerun_invocation(config: pytest.Config) -> str | None:
    """In the process the user started: put :func:`rerun_invocation` in the environment
    every process under it inherits; returns the value it replaced (an outer run's, for
    :func:`restore_rerun_invocation`).  A child keeps the one it inherited."""
    import json

    from pytest_gpucheck.environment import RERUN_VARIABLE

    if _is_child(config):
        return None
    if _INVOCATION_KEY in config.stash:  # computed again, the added suites known now
        del config.stash[_INVOCATION_KEY]
    previous = os.environ.get(RERUN_VARIABLE)
    os.environ[RERUN_VARIABLE] = json.dumps(rerun_invocation(config))
    return previous


def restore_rerun_invocation(config: pytest.Config, previous: str | None) -> None:
    """At the end of the process the user started: the environment as it was (an inline
    run inside another keeps the outer run's)."""
    from pytest_gpucheck.environment import RERUN_VARIABLE

    if _is_child(config):
        return
    if previous is None:
        os.environ.pop(RERUN_VARIABLE, None)
    else:
        os.environ[RERUN_VARIABLE] = previous


def rerun_options(config: pytest.Config) -> list[str]:
    """The options every rerun line of this run carries after its selector and backend:
    the user's (:func:`rerun_invocation`) and the hypothesis options they gave."""
    invocation = rerun_invocation(config)
    return [*invocation["options"], *invocation.get("hypothesis", [])]


def options_for(selector: list[str] | tuple[str, ...],
                options: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``options`` as the rerun of ``selector`` needs them: ``--gpu-conformance`` adds the
    whole bundled suites to any command, so it goes with a ``-k`` selector (an item of an
    added suite) and never with a node id (the user's own test would run beside every
    suite test).

    >>> options_for(["tests/test_a.py::test_x[numpy]"], ["--gpu-conformance", "-p", "x"])
    ('-p', 'x')
    """
    if "-k" in selector:
        return tuple(options)
    return tuple(option for option in options if option != "--gpu-conformance")


def target_from_nodeid(nodeid: str, config: pytest.Config) -> list[str]:
    """What selects an item known by its node id alone (a report pytest-xdist's controller
    made for a worker that crashed): the file relative to the user's folder, or for a
    file of an added suite (not under the rootdir) the ``-k`` form."""
    invocation = rerun_invocation(config)
    file_part, _, name = nodeid.partition("::")
    if not name:
        return [nodeid]
    path = Path(config.rootpath) / file_part
    if not path.exists():
        for folder in invocation["added"]:
            if (Path(folder) / file_part).exists():
                path = Path(folder) / file_part
                break
    return list(rerun_selector(path, name, invocation_dir=invocation["dir"],
                               named=invocation["paths"],
                               added=tuple(Path(folder) for folder in invocation["added"])))


__all__ = ["ADDED_SUITES_KEY", "export_rerun_invocation", "named_paths", "options_for",
           "rerun_invocation",
           "rerun_options", "rerun_selector", "rerun_target", "restore_rerun_invocation",
           "stable_nodeid", "target_from_nodeid"]
