"""The test modules shown in docs/mpi.md run as written, spawned and under ``mpiexec``.

One project holds the two examples and an unmarked test that fails on rank 1; each
command of docs/mpi.md runs on it once (a module-scoped fixture) and the tests read
those runs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mpi_runs import MPIEXEC, NEEDS_MPIEXEC, REPO_ROOT, run_user_pytest, this_checkout

pytestmark = [pytest.mark.slow, NEEDS_MPIEXEC]
RUN_LIMIT = 180

#: Deselected by ``-m mpi``: were it run, rank 1's failure would fail the launched job.
UNMARKED = '''
def test_unmarked_fails_on_rank_1_only(mpi_rank):
    assert mpi_rank != 1, "unmarked test broke on rank 1"
'''


def mpi_examples() -> list[str]:
    """The python blocks of docs/mpi.md that are MPI test modules."""
    text = (REPO_ROOT / "docs" / "mpi.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "mark.mpi" in b]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    examples = mpi_examples()
    assert len(examples) == 2
    folder = tmp_path_factory.mktemp("docs")
    (folder / "test_fixtures_example.py").write_text(examples[0], encoding="utf-8")
    (folder / "test_own_exchange_example.py").write_text(examples[1], encoding="utf-8")
    (folder / "test_unmarked.py").write_text(UNMARKED, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def spawned(project: Path) -> subprocess.CompletedProcess[str]:
    """``pytest -m mpi`` (spawned mode), with the launcher's ranks limited to 2."""
    return run_user_pytest(project, "-m", "mpi", "--gpu-mpi-max-ranks=2", timeout=RUN_LIMIT,
                           extra_env=this_checkout())


@pytest.fixture(scope="module")
def launched(project: Path) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n 2 python -m pytest -m mpi`` (every rank runs the session)."""
    assert MPIEXEC is not None
    return run_user_pytest(project, "-m", "mpi", timeout=RUN_LIMIT,
                           launcher=(MPIEXEC, "-n", "2"), extra_env=this_checkout())


def test_docs_examples_spawned(spawned: subprocess.CompletedProcess[str]) -> None:
    # 2 fixture examples + 3 sizes x (direct, staged) on numpy; the unmarked test deselected
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    assert "8 passed, 1 deselected" in spawned.stdout.splitlines()[-1], spawned.stdout


def test_a_count_that_did_not_run_shows_in_the_default_output(
        spawned: subprocess.CompletedProcess[str]) -> None:
    # docs/mpi.md: the counts that did not run are named. Before, the default output
    # said `1 passed` and the count 4 (test_global_sum's ranks=[2, 4]) showed only with -rA.
    out = spawned.stdout
    assert spawned.returncode == 0, out + spawned.stderr
    # The sample line docs/mpi.md prints is this run's line, word for word.
    docs = (REPO_ROOT / "docs" / "mpi.md").read_text(encoding="utf-8")
    sample = next(line for line in docs.splitlines()
                  if line.startswith("gpucheck mpi: not run with"))
    assert sample in out.splitlines(), out
    assert "8 passed" in out.splitlines()[-1]


def test_docs_examples_under_mpiexec(launched: subprocess.CompletedProcess[str]) -> None:
    assert "8 passed" in launched.stdout, launched.stdout + launched.stderr
    assert launched.returncode == 0


def test_launched_mode_selects_with_the_marker(launched: subprocess.CompletedProcess[str]
                                               ) -> None:
    """Under the launcher ``-m mpi`` leaves the unmarked test out on every rank: its
    failure on rank 1 is neither run nor reported, and the job exits 0."""
    out = launched.stdout + launched.stderr
    assert "8 passed, 1 deselected" in launched.stdout.splitlines()[-1], out
    assert "unmarked test broke on rank 1" not in out
    assert launched.returncode == 0, out
