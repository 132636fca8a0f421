"""Under an MPI launcher, a project that merely has the plugin installed runs as without it.

``mpiexec -n 2 python -m pytest`` runs pytest on every rank.  The plugin's rank session
(rank 0 alone prints, outcomes exchanged between the ranks, no pytest-xdist, guarded
``Abort``) takes over a rank only where the run uses the plugin's MPI feature: a test
with the plugin's ``mpi(ranks=...)`` marker or one of its ``mpi_comm`` / ``mpi_rank`` /
``mpi_size`` / ``mpi_transport`` fixtures (``pytest_gpucheck/mpi/takeover.py``).

The foreign project here is a plain mpi4py project with a pytest-mpi-shaped marker: its
conftest.py sets ``mpi4py.rc.thread_level`` before it imports ``mpi4py.MPI``, keeps
``MPI.COMM_WORLD`` at import, defines a fixture of its own named ``mpi_comm``, and
stands in for pytest-mpi (``--with-mpi``, a bare ``@pytest.mark.mpi``); one test fails
on rank 1 only.  It runs as a user runs it, ``mpiexec -n 2 python -m pytest``, with the
plugin (installed: pytest loads it by its entry point) and with ``-p no:gpucheck`` (the
entry point's name in pyproject.toml), each rank's output in a file of its own (Hydra's
``-outfile-pattern``: the ranks' lines interleave at random on one stream).

Before, with the plugin: rank 1 printed nothing; its failure was relisted by rank 0
under "failures on other MPI ranks", shown with ``GuardedIntracomm`` in place of
mpi4py's ``Intracomm``; the thread level test failed on both ranks (the plugin imported
``mpi4py`` before the conftest.py could set ``mpi4py.rc``: MULTIPLE, not SERIALIZED);
``-n 2`` was refused with exit 4; a rank that collected a test of the plugin's alone
hung until the end-of-session exchange's 60 s watchdog.  Each test below failed so, but
the one that checks that a test with only the plugin's fixtures is still the plugin's.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mpi_runs import MPIEXEC, NEEDS_MPIEXEC, REPO_ROOT, this_checkout
from user_runs import run_pytest, write_project

pytestmark = [pytest.mark.slow, NEEDS_MPIEXEC]

RUN_LIMIT = 120

FOREIGN_CONFTEST = '''
import mpi4py

mpi4py.rc.thread_level = "serialized"  # the project's own MPI setting, before MPI starts

import pytest
from mpi4py import MPI

WORLD = MPI.COMM_WORLD  # kept at import


def pytest_addoption(parser):
    parser.addoption("--with-mpi", action="store_true")  # pytest-mpi's switch


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: run with MPI (pytest-mpi's marker)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("mpi") and not config.getoption("with_mpi"):
            item.add_marker(pytest.mark.skip(reason="needs --with-mpi"))


@pytest.fixture
def mpi_comm():  # the project's own fixture, under the plugin's fixture's name
    return WORLD
'''

FOREIGN_TESTS = '''
import pytest
from mpi4py import MPI


def test_thread_level_is_the_projects():
    assert MPI.Query_thread() == MPI.THREAD_SERIALIZED


@pytest.mark.mpi
def test_allreduce(mpi_comm):
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


def test_fails_on_rank_1(mpi_comm):
    print("rank", mpi_comm.Get_rank(), "says so")
    assert mpi_comm.Get_rank() != 1, "broken on rank 1"
'''

#: The duration in pytest's last line, and object addresses (mpi4py's repr).
NOISE = re.compile(r" in \d+(\.\d+)?s( \([0-9:]+\))?|0x[0-9a-f]+")


def _run(project: Path, name: str, *args: str) -> tuple[int, list[list[str]]]:
    """``mpiexec -n 2 python -m pytest ARGS`` in ``project``: the exit status and each
    rank's output lines (durations and addresses left out)."""
    assert MPIEXEC is not None
    pattern = project / f"{name}.%r.out"
    done = run_pytest(project, *args, timeout=RUN_LIMIT,
                      launcher=(MPIEXEC, "-outfile-pattern", str(pattern), "-n", "2"),
                      extra_env={"COLUMNS": "120", **this_checkout()})
    outputs = []
    for rank in (0, 1):
        path = project / f"{name}.{rank}.out"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        outputs.append([NOISE.sub("N", line) for line in text.splitlines()])
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, outputs


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    return write_project(tmp_path / "foreign", {"conftest.py": FOREIGN_CONFTEST,
                                                "test_foreign.py": FOREIGN_TESTS})


def test_a_foreign_mpi_project_under_mpiexec_runs_as_without_the_plugin(foreign: Path) -> None:
    """Every rank's output and the job's exit status, with and without the plugin."""
    status_without, without = _run(foreign, "without", "-p", "no:gpucheck", "-q", "-rA",
                                   "--with-mpi")
    status_with, with_plugin = _run(foreign, "with", "-q", "-rA", "--with-mpi")
    # The check's premise: without the plugin each rank prints its own session.
    assert without[0][-1].startswith("3 passed"), without[0]
    assert without[1][-1].startswith("1 failed, 2 passed"), without[1]
    assert "rank 1 says so" in "\n".join(without[1])
    assert status_without == 1
    assert with_plugin[0] == without[0]
    assert with_plugin[1] == without[1]
    assert status_with == status_without


NOT_MPI_TESTS = '''
def test_one():
    pass


def test_two():
    pass
'''


def test_a_foreign_project_under_mpiexec_keeps_pytest_xdist(tmp_path: Path) -> None:
    """``-n 2`` on every rank of a project that does not use the feature: its tests run
    on the workers as without the plugin (before: exit 4, "add -n0")."""
    (tmp_path / "test_plain.py").write_text(NOT_MPI_TESTS, encoding="utf-8")
    status, outputs = _run(tmp_path, "xdist", "-q", "-n", "2")
    assert status == 0, outputs
    for lines in outputs:
        assert lines[-1].startswith("2 passed"), lines


OURS_WITH_FIXTURES_ONLY = '''
def test_fails_on_rank_1(mpi_rank, mpi_size):
    assert mpi_size == 2
    assert mpi_rank != 1, "broken on rank 1"
'''


def test_a_test_with_only_the_plugins_fixtures_is_the_plugins_session(tmp_path: Path) -> None:
    """No ``mpi`` marker, the plugin's ``mpi_rank``: the rank session takes over (rank 1
    silent, its failure listed by rank 0); with ``-n 2`` the workers refuse it, exit 4
    on every rank, as before (the controller collects nothing: its workers tell)."""
    (tmp_path / "test_ours.py").write_text(OURS_WITH_FIXTURES_ONLY, encoding="utf-8")
    status, outputs = _run(tmp_path, "ours", "-q")
    assert status == 1, outputs
    assert outputs[1] == [], outputs[1]
    text = "\n".join(outputs[0])
    assert "failures on other MPI ranks" in text, text
    assert "rank 1: test_ours.py::test_fails_on_rank_1 (call)" in text, text
    assert "broken on rank 1" in text, text
    status, outputs = _run(tmp_path, "xdist", "-q", "-n", "2")
    assert status == 4, outputs


DIFFERENT_COLLECTIONS = '''
import os

import pytest
from mpi4py import MPI


def test_plain():
    assert MPI.COMM_WORLD.Get_size() == 2


if os.environ.get("PMI_RANK") == "1":  # only rank 1 collects the plugin's test
    @pytest.mark.mpi(ranks=2)
    def test_only_rank_1_collects(mpi_comm):
        mpi_comm.Barrier()
'''


def test_ranks_that_collect_differently_end_the_job_with_the_cause(tmp_path: Path) -> None:
    """Rank 1 decides the session is the plugin's, rank 0 that it is not: rank 1 waits
    for rank 0 at most ``--gpu-mpi-timeout``, then ends the job non-zero, naming why,
    and no rank hangs."""
    assert MPIEXEC is not None
    (tmp_path / "test_differ.py").write_text(DIFFERENT_COLLECTIONS, encoding="utf-8")
    done = run_pytest(tmp_path, "-q", "--gpu-mpi-timeout=3", timeout=RUN_LIMIT,
                      launcher=(MPIEXEC, "-n", "2"), extra_env=this_checkout())
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # docs/mpi.md's sample line (at the default --gpu-mpi-timeout), word for word.
    docs = (REPO_ROOT / "docs" / "mpi.md").read_text(encoding="utf-8")
    sample = next(line for line in docs.splitlines()
                  if line.startswith("gpucheck mpi: rank 1 uses the plugin's MPI feature"))
    assert sample.replace(" 300 s ", " 3 s ") in output.splitlines(), output
    assert "_meet_the_other_ranks_after_collection" in output, output


def test_an_abort_in_a_foreign_project_is_mpi4pys_own(tmp_path: Path) -> None:
    """``MPI.COMM_WORLD.Abort(3)`` through a reference the conftest.py kept: the job
    ends with the code given and no word of the plugin (before: "gpucheck mpi: rank 1
    called MPI_Abort(3) during test_abort.py::test_abort; the job ends here")."""
    (tmp_path / "conftest.py").write_text(
        "from mpi4py import MPI\n\nWORLD = MPI.COMM_WORLD\n", encoding="utf-8")
    (tmp_path / "test_abort.py").write_text(
        "def test_abort():\n    from conftest import WORLD\n\n"
        "    if WORLD.Get_rank() == 1:\n        WORLD.Abort(3)\n    WORLD.Barrier()\n",
        encoding="utf-8")
    assert MPIEXEC is not None
    outputs: list[subprocess.CompletedProcess[str]] = []
    for plugin in (["-p", "no:gpucheck"], []):
        outputs.append(run_pytest(tmp_path, "-q", *plugin, timeout=RUN_LIMIT,
                                  launcher=(MPIEXEC, "-n", "2"), extra_env=this_checkout()))
    without, with_plugin = outputs
    assert without.returncode == 3, without.stdout + without.stderr
    assert with_plugin.returncode == 3, with_plugin.stdout + with_plugin.stderr
    assert "gpucheck" not in with_plugin.stdout + with_plugin.stderr


TORCH_ONLY_ON_RANK_0 = '''
import os
import sys

if os.environ.get("PMI_RANK") == "1":
    sys.modules["torch"] = None  # torch cannot be imported on rank 1 only
'''

ON_EVERY_BACKEND = '''
import pytest


@pytest.mark.mpi(ranks=2)
def test_on_every_backend(gpu_backend, mpi_comm):
    mpi_comm.Barrier()
'''


def test_a_backend_one_rank_lacks_is_skipped_on_every_rank(tmp_path: Path) -> None:
    """The plugin's session starts after collection, which parametrized the items with
    each rank's own probes: torch-cpu, available on rank 0 only, is still skipped on both
    ranks with rank 1's reason (without the skip after the ranks compare their probes,
    rank 0 ran it alone: "MPI test failed on rank(s) 0 of 2", an error)."""
    assert MPIEXEC is not None
    (tmp_path / "conftest.py").write_text(TORCH_ONLY_ON_RANK_0, encoding="utf-8")
    (tmp_path / "test_backends.py").write_text(ON_EVERY_BACKEND, encoding="utf-8")
    done = run_pytest(tmp_path, "-rs", "--gpu-backends=cpu", "--gpu-mpi-timeout=60",
                      timeout=RUN_LIMIT, launcher=(MPIEXEC, "-n", "2"),
                      extra_env={"COLUMNS": "250", **this_checkout()})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "torch-cpu: unavailable on rank 1, so skipped on every rank" in output, output
    assert "SKIPPED [1] test_backends.py:5: unavailable on rank 1 (torch is not installed" \
        in output, output
    assert "error" not in done.stdout.splitlines()[-1], output
