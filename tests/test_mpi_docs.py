"""The test modules shown in docs/mpi.md run as written, spawned and under ``mpiexec``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpucheck.mpi.launcher import find_executable

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = find_executable("mpiexec")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'"
)]
RUN_LIMIT = 180


@pytest.fixture(autouse=True)
def _use_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The jobs run in a temporary directory: make them import this checkout's packages.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def mpi_examples() -> list[str]:
    """The python blocks of docs/mpi.md that are MPI test modules."""
    text = (ROOT / "docs" / "mpi.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "mark.mpi" in b]


def _write_examples(pytester: pytest.Pytester) -> None:
    examples = mpi_examples()
    assert len(examples) == 2
    pytester.makepyfile(test_fixtures_example=examples[0], test_own_exchange_example=examples[1])


def test_docs_examples_spawned(pytester: pytest.Pytester) -> None:
    _write_examples(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "mpi",
                                           "--gpu-mpi-max-ranks=2", timeout=RUN_LIMIT)
    # 2 fixture examples + 3 sizes x (direct, staged) on numpy
    result.assert_outcomes(passed=8)


def test_docs_examples_under_mpiexec(pytester: pytest.Pytester) -> None:
    _write_examples(pytester)
    command = [str(MPIEXEC), "-n", "2", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
               "-m", "mpi"]
    done = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False, stdin=subprocess.DEVNULL)
    assert "8 passed" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0
