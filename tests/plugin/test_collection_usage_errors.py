"""Malformed markers stop the run with every error, one line each, exit 4: in a plain run,
under pytest-xdist (``-n 2``, the README's fast loop), with isolation workers and
under an MPI launcher.

A user's file with two bad ``gpu_backends`` markers and a bad ``mpi`` marker: each fix
should not cost another run, and ``-n 2`` crashed with an INTERNALERROR (the xdist
worker stopped after announcing its items, the controller asserted on them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from user_runs import run_pytest

from pytest_gpucheck.mpi.launcher import find_executable

BAD_MARKERS = '''
import pytest


@pytest.mark.gpu_backends("nunpy")
def test_a(gpu_backend):
    pass


@pytest.mark.mpi(ranks="two")
@pytest.mark.parametrize("n", [1, 2])
def test_b(mpi_comm, n):
    pass


@pytest.mark.gpu_backends("torhc")
def test_c(gpu_backend):
    pass


def test_fine():
    pass
'''

#: The start of each error line, once each (test_b's once, not once per parameter).
EXPECTED = (
    "ERROR: test_m3.py::test_a: @pytest.mark.gpu_backends: unknown backend or group 'nunpy'; ",
    "ERROR: test_m3.py::test_c: @pytest.mark.gpu_backends: unknown backend or group 'torhc'; ",
    "ERROR: test_m3.py::test_b: @pytest.mark.mpi got ranks='two': rank counts must be integers "
    ">= 1; use @pytest.mark.mpi(ranks=2) or @pytest.mark.mpi(ranks=[2, 4], timeout=60)",
)
REPO_ROOT = Path(__file__).resolve().parents[2]


def check_every_error_once(returncode: int, stdout: str, stderr: str) -> None:
    """Exit 4, each expected line exactly once, nothing else on ERROR lines, no traceback
    and no test run."""
    text = stdout + stderr
    assert returncode == pytest.ExitCode.USAGE_ERROR, text
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == len(EXPECTED), errors
    for start in EXPECTED:
        assert sum(line.startswith(start) for line in errors) == 1, (start, errors)
    assert "INTERNALERROR" not in text, text
    assert "Traceback" not in text, text
    assert " passed" not in stdout, stdout


@pytest.mark.parametrize("args", [(), ("--gpu-isolate=backend",)], ids=["plain", "isolated"])
def test_every_bad_marker_in_one_run(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    pytester.makepyfile(test_m3=BAD_MARKERS)
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    check_every_error_once(result.ret, "\n".join(result.outlines), "\n".join(result.errlines))


@pytest.mark.slow
def test_every_bad_marker_under_xdist(tmp_path: Path) -> None:
    (tmp_path / "test_m3.py").write_text(BAD_MARKERS, encoding="utf-8")
    done = run_pytest(tmp_path, "-n", "2", "--gpu-backends=numpy", timeout=120,
                      extra_env={"PYTHONPATH": str(REPO_ROOT)})
    check_every_error_once(done.returncode, done.stdout, done.stderr)


MPIEXEC = find_executable("mpiexec")


@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'")
def test_every_bad_marker_under_a_launcher(tmp_path: Path) -> None:
    """``mpiexec -n 2 python -m pytest``: every rank finds the errors, rank 0 prints them."""
    (tmp_path / "test_m3.py").write_text(BAD_MARKERS, encoding="utf-8")
    done = run_pytest(tmp_path, "--gpu-backends=numpy", launcher=(str(MPIEXEC), "-n", "2"),
                      timeout=120, extra_env={"PYTHONPATH": str(REPO_ROOT)})
    check_every_error_once(done.returncode, done.stdout, done.stderr)

