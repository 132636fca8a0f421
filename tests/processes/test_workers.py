"""Items run in child processes the way users run them: the child gets the options
the features forward, and routing reads the backend parameter, never the id text.

Each scenario is a temporary project run as ``python -m pytest`` in a subprocess.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import user_runs

# Every test here runs a temporary project in a subprocess.
pytestmark = pytest.mark.slow

RUN_LIMIT = 240


def run_pytest(project: Path, *args: str,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return user_runs.run_pytest(project, *user_runs.LEAN_PLUGINS, *args, timeout=RUN_LIMIT,
                                extra_env={**user_runs.LEAN_ENV, **(extra_env or {})})


FORWARDING_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--my-seed", default=None)


def pytest_gpucheck_child_args(config):
    value = config.getoption("my_seed")
    return [] if value is None else [f"--my-seed={int(value) + 1}"]
"""

#: The twin's conftest: the same option, no hook.
OPTION_ONLY_CONFTEST = FORWARDING_CONFTEST.split("\n\n\ndef pytest_gpucheck")[0]

FORWARDING_TESTS = """
import os

import pytest


@pytest.mark.gpu_backends("numba-cudasim")
def test_child_sees_the_option(gpu_backend, request):
    assert os.environ.get("PYTEST_GPUCHECK_SIMULATOR_CHILD") == "1"
    assert request.config.getoption("my_seed") == "7"
"""


def test_a_plugin_forwards_its_option_to_the_simulator_child(
        serial_run: subprocess.CompletedProcess[str]) -> None:
    """A conftest implementing ``pytest_gpucheck_child_args`` gets its option into the child."""
    assert serial_run.returncode == 0, serial_run.stdout + serial_run.stderr
    assert "test_forward.py::test_child_sees_the_option[numba-cudasim] PASSED" in \
        serial_run.stdout, serial_run.stdout


def test_without_the_hook_the_option_still_reaches_the_child(
        xdist_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """The twin: without the hook the option reaches the child all the same, as the user
    wrote it (an option of a conftest.py is forwarded by the option table,
    :mod:`pytest_gpucheck.processes.child_options`).  The ``-n 2`` run's project has
    the conftest without the hook."""
    _, result = xdist_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED test_forward.py::test_child_sees_the_option[numba-cudasim]" in \
        result.stdout, result.stdout


def test_the_hook_has_the_last_word(serial_run: subprocess.CompletedProcess[str]) -> None:
    """What a plugin's hook gives the child comes after the user's forwarded tokens, so a
    plugin can pass a value it computed (an absolute path, say) in place of the user's:
    the serial run's user gives ``--my-seed=6``, its hook ``--my-seed=7``, and the child
    sees 7 (the user's 6 reaches it too, first)."""
    assert serial_run.returncode == 0, serial_run.stdout + serial_run.stderr
    assert "test_forward.py::test_child_sees_the_option[numba-cudasim] PASSED" in \
        serial_run.stdout, serial_run.stdout


ROUTING_TESTS = """
import os

import pytest


@pytest.mark.parametrize("label", ["numba-cudasim"])
def test_label_names_the_simulator(gpu_backend, label):
    in_child = os.environ.get("PYTEST_GPUCHECK_SIMULATOR_CHILD") == "1"
    assert in_child == (gpu_backend.name == "numba-cudasim"), (gpu_backend.name, in_child)
"""


def test_routing_reads_the_backend_parameter_not_the_id(
        serial_run: subprocess.CompletedProcess[str]) -> None:
    """``test_label_names_the_simulator[numpy-numba-cudasim]`` has the simulator's name in
    its id but runs on numpy: it stays in-process; the simulator item goes to the child."""
    assert serial_run.returncode == 0, serial_run.stdout + serial_run.stderr
    assert "[numpy-numba-cudasim] PASSED" in serial_run.stdout
    assert "[numba-cudasim-numba-cudasim] PASSED" in serial_run.stdout


OPTS_TESTS = (
    "import pytest\n\n"
    "@pytest.mark.gpu_backends('numba-cudasim')\n"
    "def test_opts(gpu_backend, request):\n"
    "    assert request.config.getoption('gpu_mpi_max_ranks') == 3\n"
    "    assert request.config.getoption('gpu_bench_l2_flush') is True\n")

#: The features' forwarded options, given to both shared runs.
FEATURE_OPTIONS = ("--gpu-mpi-max-ranks=3", "--gpu-bench-l2-flush")


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One serial run of a project with the forwarding hook (which gives the child the
    user's ``--my-seed`` plus one), the routing test and the features' options: each test
    below reads its own items from it."""
    project = tmp_path_factory.mktemp("serial")
    (project / "conftest.py").write_text(FORWARDING_CONFTEST)
    (project / "test_forward.py").write_text(FORWARDING_TESTS)
    (project / "test_routing.py").write_text(ROUTING_TESTS)
    (project / "test_opts.py").write_text(OPTS_TESTS)
    return run_pytest(project, "--gpu-backends=numpy,numba-cudasim", "--my-seed=6",
                      *FEATURE_OPTIONS, "-v")


@pytest.fixture(scope="module")
def xdist_run(tmp_path_factory: pytest.TempPathFactory,
              ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One ``-n 2`` run of the eight pid-recording items, the options item and, with a
    conftest that adds ``--my-seed`` but no hook, the item that reads it in the child."""
    project = tmp_path_factory.mktemp("xdist")
    (project / "conftest.py").write_text(OPTION_ONLY_CONFTEST)
    (project / "test_forward.py").write_text(FORWARDING_TESTS)
    (project / "test_pids.py").write_text(PID_TESTS)
    (project / "test_opts.py").write_text(OPTS_TESTS)
    pids = project / "pids"
    pids.mkdir()
    return pids, run_pytest(project, "--gpu-backends=numba-cudasim", "--my-seed=7",
                            *FEATURE_OPTIONS, *user_runs.XDIST_PLUGIN, "-n", "2", "-rA",
                            extra_env={"PIDS_DIR": str(pids)})


@pytest.mark.parametrize("xdist", [True, False], ids=["xdist", "serial"])
def test_mpi_and_bench_options_reach_the_child(
        request: pytest.FixtureRequest, xdist: bool) -> None:
    """The features' own hook implementations forward their options (checked in the child)."""
    if xdist:
        _, result = request.getfixturevalue("xdist_run")
        passed = "PASSED test_opts.py::test_opts[numba-cudasim]"
    else:
        result = request.getfixturevalue("serial_run")
        passed = "test_opts.py::test_opts[numba-cudasim] PASSED"
    assert result.returncode == 0, result.stdout + result.stderr
    assert passed in result.stdout, result.stdout


PID_TESTS = """
import os

import pytest

pytestmark = pytest.mark.gpu_backends("numba-cudasim")


@pytest.mark.parametrize("n", range(8))
def test_records_its_process(gpu_backend, n):
    out = os.environ["PIDS_DIR"]
    with open(os.path.join(out, f"{n}.pid"), "w") as handle:
        handle.write(str(os.getpid()))
"""


def test_each_xdist_worker_reuses_one_simulator_child(
        xdist_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """Under ``-n 2`` the simulator items of a worker share one child (not one per item):
    eight items run in at most two processes."""
    pids, result = xdist_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert "10 passed" in result.stdout
    seen = {path.read_text() for path in pids.glob("*.pid")}
    assert len(list(pids.glob("*.pid"))) == 8
    assert 1 <= len(seen) <= 2, seen
