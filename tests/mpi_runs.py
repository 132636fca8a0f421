"""Running a temporary MPI project the way a user does, once per test module: shared by the
tests of spawned and launched MPI sessions (``tests/test_mpi_*.py``, ``test_verdicts_mpi.py``).

A module-scoped fixture runs the project once and every test of the module reads that run,
so the fixtures here cannot use the function-scoped ``monkeypatch``: the environment the
runs need (a wide terminal, this checkout on ``PYTHONPATH``) is passed to them explicitly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_gpucheck.mpi.launcher import find_executable

REPO_ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = find_executable("mpiexec")
#: The mark of a module whose runs need a launcher.
NEEDS_MPIEXEC = pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'")


def user_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """A user's environment for a run: this one's, less what this test session set for
    its own children and workers (``PYTEST_*``, among them ``PYTEST_XDIST_WORKER``, which
    would make the run's session batch MPI items as an xdist worker does, one job per
    item; the simulator switch), at the 250 columns tests/conftest.py gives every run
    (the plugin's lines are read whole), plus ``extra_env``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "NUMBA_ENABLE_CUDASIM"))}
    env["COLUMNS"] = "250"
    env.update(extra_env or {})
    return env


def run_user_pytest(project: Path, *args: str, timeout: float, launcher: Sequence[str] = (),
                    extra_env: dict[str, str] | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """``[LAUNCHER...] python -m pytest -p no:cacheprovider ARGS`` in ``project``, as a user
    types it, in :func:`user_env` (``extra_env`` added), bounded by ``timeout`` seconds."""
    return subprocess.run([*launcher, sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           *args], cwd=project, env=user_env(extra_env), capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


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
