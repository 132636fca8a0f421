"""Every numba-cudasim item gets exactly one honest outcome, however its child process ends.

Each scenario is a temporary project run the way a user runs it: ``python -m
pytest`` in a subprocess.  The crashes are real (a segfault through
``ctypes.string_at(0)``, ``os._exit``, ``os.abort()``), first, in the middle
and last of the simulator batch, serially and under pytest-xdist.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import user_runs
from user_runs import LEAN_ENV, LEAN_PLUGINS, XDIST_PLUGIN, junit_outcomes

pytestmark = pytest.mark.slow

RUN_LIMIT = 240
#: Under pytest-xdist, with one worker: the simulator items take the xdist worker's path
#: (its own simulator child, its reports relayed through xdist) as under ``-n 2``, at
#: one xdist worker and its simulator child less.
XDIST = [*XDIST_PLUGIN, "-n", "1"]

CRASHING_TESTS = """
import ctypes
import os

import pytest

pytestmark = pytest.mark.gpu_backends("numba-cudasim")


def test_1_segfault_first(gpu_backend):
    ctypes.string_at(0)


def test_2_passes(gpu_backend):
    pass


def test_3_fails(gpu_backend):
    assert 1 == 2


def test_4_exits(gpu_backend):
    os._exit(3)


def test_5_passes(gpu_backend):
    pass


def test_6_aborts_last(gpu_backend):
    os.abort()
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return user_runs.run_pytest(project, *LEAN_PLUGINS, *args, timeout=RUN_LIMIT,
                                extra_env=LEAN_ENV)


@pytest.mark.parametrize("xdist", [[], XDIST], ids=["serial", "xdist"])
def test_each_crash_fails_its_own_test_and_the_others_still_run(
    tmp_path: Path, xdist: list[str]
) -> None:
    (tmp_path / "test_sim.py").write_text(CRASHING_TESTS)
    result = run_pytest(tmp_path, "--gpu-backends=numba-cudasim", "--junitxml=junit.xml",
                        "--gpu-report=report.json", *xdist)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    outcomes = junit_outcomes(tmp_path / "junit.xml")
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_1_segfault_first[numba-cudasim]": "failure",
        "test_2_passes[numba-cudasim]": "passed",
        "test_3_fails[numba-cudasim]": "failure",
        "test_4_exits[numba-cudasim]": "failure",
        "test_5_passes[numba-cudasim]": "passed",
        "test_6_aborts_last[numba-cudasim]": "failure",
    }, output
    segfault = outcomes["test_1_segfault_first[numba-cudasim]"][1]
    assert "child process was killed by signal 11 (SIGSEGV) while running this test" in segfault
    # faulthandler's dump is kept whole: the fatal error and the crashing frame.
    assert "Fatal Python error: Segmentation fault" in segfault
    assert "in test_1_segfault_first" in segfault
    assert "assert 1 == 2" in outcomes["test_3_fails[numba-cudasim]"][1]
    assert "exited with code 3 while running this test" in outcomes[
        "test_4_exits[numba-cudasim]"][1]
    aborted = outcomes["test_6_aborts_last[numba-cudasim]"][1]
    assert "killed by signal 6 (SIGABRT)" in aborted
    assert "in test_6_aborts_last" in aborted
    assert "4 failed, 2 passed" in result.stdout, output
    # The matrix counts the crashes too.
    (cell,) = json.loads((tmp_path / "report.json").read_text())["cells"]
    assert (cell["status"], cell["fail"], cell["pass"]) == ("fail", 4, 2)


#: A conftest whose simulator child dies on the way out (the parent's process lives).
DIES_ON_THE_WAY_OUT = (
    "import os\n\ndef pytest_unconfigure(config):\n"
    "    if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':\n        os._exit(7)\n")

#: Simulator items marked MPI, which the simulator child spawns under ``--gpu-mpi-launcher``.
SIMULATOR_MPI_TESTS = (
    "import pytest\n\npytestmark = [pytest.mark.gpu_backends('numba-cudasim'), "
    "pytest.mark.mpi(ranks=2)]\n\n"
    "def test_one(gpu_backend, mpi_comm):\n    pass\n\n"
    "def test_two(gpu_backend, mpi_comm):\n    pass\n")


@pytest.fixture(scope="module")
def dying_child_run(tmp_path_factory: pytest.TempPathFactory,
                    ) -> subprocess.CompletedProcess[str]:
    """One serial run for two scenarios of one simulator child: a test that passes, two
    MPI items whose job never starts (a "launcher" that exits at once), then the child
    dies after its last test."""
    project = tmp_path_factory.mktemp("dying-child")
    (project / "test_sim.py").write_text(
        "import pytest\n\n@pytest.mark.gpu_backends('numba-cudasim')\n"
        "def test_passes(gpu_backend):\n    pass\n")
    (project / "test_sim_mpi.py").write_text(SIMULATOR_MPI_TESTS)
    (project / "conftest.py").write_text(DIES_ON_THE_WAY_OUT)
    return run_pytest(project, "--gpu-backends=numba-cudasim", "--gpu-mpi-launcher=false",
                      "--gpu-mpi-max-ranks=2")


@pytest.mark.parametrize("xdist", [[], XDIST], ids=["serial", "xdist"])
def test_a_child_that_dies_after_its_last_test_fails_the_run(
        request: pytest.FixtureRequest, tmp_path: Path, xdist: list[str]) -> None:
    if xdist:
        (tmp_path / "test_sim.py").write_text(
            "import pytest\n\n@pytest.mark.gpu_backends('numba-cudasim')\n"
            "def test_passes(gpu_backend):\n    pass\n")
        # Dies on the way out, in the simulator child only.
        (tmp_path / "conftest.py").write_text(DIES_ON_THE_WAY_OUT)
        result = run_pytest(tmp_path, "--gpu-backends=numba-cudasim", *xdist)
    else:
        result = request.getfixturevalue("dying_child_run")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert ("gpucheck: The numba-cudasim child process exited with code 7 after its last test"
            in result.stdout)


def test_simulator_mpi_items_of_a_job_that_never_started_are_not_crashes(
        dying_child_run: subprocess.CompletedProcess[str]) -> None:
    # The simulator child spawns these under a "launcher" that exits at once:
    # every item fails as not run, in one child, and none is taken for a crash.
    result = dying_child_run
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "2 failed" in result.stdout, output
    # Once per item in the failures section (pytest's short summary repeats it, in
    # full where CI is set).
    # (the plugin's own summary, which now prints before pytest's short summary, names
    # each failure once more in its "FAIL id: reason" lines: those are not the section)
    failures = "\n".join(line for line in output.split("short test summary info")[0].splitlines()
                         if not line.startswith("FAIL "))
    assert failures.count("exited with code 1 before running this test") == 2, output
    assert "while running this test" not in output, output
