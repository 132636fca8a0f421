"""Running a temporary MPI project the way a user does, once per test module: shared by the
tests of spawned and launched MPI sessions (``tests/mpi/test_mpi_*.py``, ``test_verdicts_mpi.py``).

A module-scoped fixture runs the project once and every test of the module reads that run,
so the fixtures here cannot use the function-scoped ``monkeypatch``: the environment the
runs need (a wide terminal, this checkout on ``PYTHONPATH``) is passed to them explicitly.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from user_runs import run_pytest

from pytest_gpucheck.mpi.launcher import find_executable

REPO_ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = find_executable("mpiexec")
#: The mark of a module whose runs need a launcher.
NEEDS_MPIEXEC = pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'")


def run_user_pytest(project: Path, *args: str, timeout: float, launcher: Sequence[str] = (),
                    extra_env: dict[str, str] | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """``[LAUNCHER...] python -m pytest ARGS`` in ``project`` as a user types it
    (user_runs.run_pytest), at the 250 columns tests/conftest.py gives every run (the
    plugin's lines are read whole)."""
    return run_pytest(project, *args, timeout=timeout, launcher=launcher,
                      extra_env={"COLUMNS": "250", **(extra_env or {})})


def this_checkout() -> dict[str, str]:
    """``PYTHONPATH`` for runs in a temporary folder: its jobs import this checkout's
    packages (pytest_gpucheck, reference_kernels), installed or not."""
    return {"PYTHONPATH": str(REPO_ROOT)}


#: The first line after a session's progress lines: a section of pytest's summary.
SUMMARY_START = re.compile(r"^=+ (ERRORS|FAILURES|PASSES|warnings summary|short test summary "
                           r"info) =+$", re.MULTILINE)


def verdicts(out: str, file: str) -> list[tuple[str, str]]:
    """The ``-v`` lines of ``file``'s tests in ``out``, as (test id, outcome), in order;
    only the session's own, above its summary (a job's output, quoted in a failure
    section, has such lines too)."""
    summary = SUMMARY_START.search(out)
    progress = out[: summary.start()] if summary else out
    return re.findall(rf"^{re.escape(file)}::(\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)",
                      progress, re.MULTILINE)


def failure_section(out: str, test: str) -> str:
    """The failure section of ``test`` (its id without the file) in pytest's output."""
    start = out.index(f"_ {test} _")
    stop = out.find("\n___", start + len(test) + 4)
    return out[start : stop if stop > 0 else None]
