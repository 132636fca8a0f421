"""Items routed to a long-lived worker keep their fixtures, as in a plain run.

The simulator items (always in a child), ``--gpu-isolate=backend`` and every
routed item under pytest-xdist run in a worker that is sent one item at a
time.  Each request names the item the worker gets next, so a module-scoped
fixture is set up once per module and process, not once per item.  A user's
``conftest.py`` logs every setup and teardown with its process id; the runs
are ``python -m pytest`` in a subprocess, as users type them.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
import user_runs

# Subprocess pytest runs through the worker routers: the slow tier.
pytestmark = pytest.mark.slow

RUN_LIMIT = 400
#: Two host backends (they share the host's isolation worker) and the simulator (its own
#: worker): both routers, without JAX's and PyTorch's imports in every process, which
#: the routing of the next item does not depend on.
ROUTED_BACKENDS = "numpy,numba-cpu,numba-cudasim"

CONFTEST = """
import os

import pytest


def _log(text):
    with open(os.environ["FIXTURE_LOG"], "a") as handle:
        handle.write(f"{os.getpid()} {text}\\n")


@pytest.fixture(scope="session")
def shared_session():
    _log("setup session")
    yield
    _log("teardown session")


@pytest.fixture(scope="module")
def shared_module(request, shared_session):
    name = request.module.__name__
    _log(f"setup {name}")
    yield
    _log(f"teardown {name}")
"""

TESTS = """
import pytest


@pytest.mark.parametrize("n", range(3))
def test_uses_module_fixture(gpu_backend, shared_module, n):
    pass
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return user_runs.run_pytest(project, *user_runs.LEAN_PLUGINS, *args,
                                timeout=RUN_LIMIT,
                                extra_env={**user_runs.LEAN_ENV,
                                           "FIXTURE_LOG": str(project / "fixtures.log")})


def _project(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_first.py").write_text(TESTS)
    (tmp_path / "test_second.py").write_text(TESTS)
    return tmp_path


def _log(project: Path) -> list[tuple[str, str, str]]:
    """(pid, setup|teardown, scope name) per logged line, in order."""
    lines = (project / "fixtures.log").read_text().splitlines()
    return [(pid, what, name) for pid, what, name in (line.split() for line in lines)]


def _check_balanced(log: list[tuple[str, str, str]]) -> None:
    """Every setup has its teardown, in its process, and a process has at most one
    module fixture up at a time (the previous module's is finished first)."""
    up: dict[str, list[str]] = {}
    for pid, what, name in log:
        modules = up.setdefault(pid, [])
        if what == "setup":
            assert name == "session" or not [m for m in modules if m != "session"], log
            modules.append(name)
        else:
            assert modules, log
            assert modules[-1] == name, log
            modules.pop()
    assert all(not modules for modules in up.values()), log


@pytest.mark.parametrize("args", [
    ("--gpu-backends=numba-cudasim", "--gpu-isolate=backend"),
    # Every backend routed to its worker (the host's isolation worker, the simulator's),
    # inside two xdist workers that each get whole files (--dist=loadfile): the next item
    # comes from xdist's queue.
    (f"--gpu-backends={ROUTED_BACKENDS}", "--gpu-isolate=backend",
     *user_runs.XDIST_PLUGIN, "-n", "2",
     "--dist=loadfile"),
], ids=["simulator-worker", "isolation-xdist"])
def test_a_module_fixture_is_set_up_once_per_module_and_process(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    project = _project(tmp_path)
    result = run_pytest(project, *args)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    backends = args[0].removeprefix("--gpu-backends=").split(",")
    assert f"{6 * len(backends)} passed" in result.stdout, output
    log = _log(project)
    _check_balanced(log)
    setups = Counter((pid, name) for pid, what, name in log if what == "setup")
    # Once per module and process: a rebuilt fixture would count 2 or more.
    assert set(setups.values()) == {1}, setups
    modules = {name for _, name in setups if name != "session"}
    assert modules == {"test_first", "test_second"}, setups


def test_a_worker_per_test_sets_up_per_test(tmp_path: Path) -> None:
    """The twin: ``--gpu-isolate=test`` gives every item a fresh process, so the same
    log counts one module setup per item (the count above would see a rebuild).  One
    file's three items prove it: each is a worker process of its own."""
    project = _project(tmp_path)
    result = run_pytest(project, "--gpu-backends=numpy", "--gpu-isolate=test", "test_first.py")
    assert result.returncode == 0, result.stdout + result.stderr
    log = _log(project)
    _check_balanced(log)
    module_setups = [name for _, what, name in log if what == "setup" and name != "session"]
    assert module_setups == ["test_first"] * 3, log
    assert len({pid for pid, what, name in log if name == "test_first"}) == 3, log
