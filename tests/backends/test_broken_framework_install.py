"""A framework install that cannot compile reads as one probe line, not a column of red cells.

The first H100 run paired numba-cuda 0.30.4 with NumPy 2.5.2, which removed
``np.row_stack``: numba-cuda's probe passed, then every kernel failed at its
first compile.  Here the same install is made on the CPU tier by a
``sitecustomize.py`` that deletes ``numpy.row_stack`` (what NumPy 2.5 did) and
reports a CUDA driver (as on a machine with a GPU), and the user's exact
commands run in a subprocess.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from user_runs import REPO, run_command

from tests.user_runs import run_pytest

ROW_STACK_GONE = """
import numpy
del numpy.row_stack  # what NumPy 2.5 did
"""
FAKE_DRIVER = """
from pytest_gpucheck.backends import _cuda_build
_cuda_build.driver_problem = lambda: None  # as on a machine with a GPU
"""
#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in a backend's probe.
LEAN = ("-p", "no:hypothesispytest")
USER_TEST = """
def test_kernel(gpu_backend):
    assert gpu_backend.probe().available
"""


def _numba_cuda_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("numba-cuda")


def _expected_line() -> str:
    import numpy as np

    return (f"numba-cuda {_numba_cuda_version()} cannot run with NumPy {np.__version__} "
            "(np.row_stack removed): pip install 'numpy<2.5'")


def _project(tmp_path: Path, *site_lines: str) -> tuple[Path, dict[str, str]]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("".join(site_lines), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_user.py").write_text(textwrap.dedent(USER_TEST), encoding="utf-8")
    return project, {"PYTHONPATH": str(site)}


@pytest.mark.slow
def test_numba_cuda_named_explicitly_on_a_broken_install_is_a_usage_error(
        tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    project, env = _project(tmp_path, ROW_STACK_GONE, FAKE_DRIVER)
    done = run_pytest(project, *LEAN, "--gpu-backends=numba-cuda", timeout=900, extra_env=env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ERROR: --gpu-backends: numba-cuda is not available: {_expected_line()}"], done.stderr


@pytest.mark.slow
def test_numba_cuda_in_all_on_a_broken_install_is_skipped_with_the_one_line(
        tmp_path: Path) -> None:
    """The header's probe line and the skip say it once; the simulator is not affected:
    it runs kernels as Python and never imports the modules that fail."""
    pytest.importorskip("numba.cuda")
    project, env = _project(tmp_path, ROW_STACK_GONE, FAKE_DRIVER)
    done = run_pytest(project, *LEAN, "--gpu-backends=all", "-rs", "-v", timeout=900, extra_env=env)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    header = [line for line in out.splitlines() if line.startswith("  numba-cuda     ")]
    assert header == [f"  numba-cuda     skipped: {_expected_line()}"], out
    assert f"SKIPPED [1] test_user.py: {_expected_line()}" in out, out
    assert "test_user.py::test_kernel[numba-cudasim] PASSED" in out, out
    assert " failed" not in out.splitlines()[-1], out


@pytest.mark.slow
def test_a_healthy_install_passes_the_compile_check(tmp_path: Path) -> None:
    """The twin: with ``row_stack`` in place the probe goes on to the device checks (no
    GPU here, so it stops at ``is_available``), never naming an incompatibility."""
    pytest.importorskip("numba.cuda")
    project, env = _project(tmp_path, FAKE_DRIVER)
    done = run_pytest(project, *LEAN, "--gpu-backends=all", timeout=900, extra_env=env)
    header = [line for line in done.stdout.splitlines() if line.startswith("  numba-cuda     ")]
    assert len(header) == 1, done.stdout
    assert "numba.cuda.is_available() is False" in header[0], done.stdout


def _python(script: str, *, simulator: bool = False) -> str:
    done = run_command([sys.executable, "-c", textwrap.dedent(script)], REPO, timeout=900,
                       extra_env={"NUMBA_ENABLE_CUDASIM": "1"} if simulator else None)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


CUDA_PYTHON_MPI_OPS = ROW_STACK_GONE + """
import pytest
from pytest_gpucheck.backends.base import BackendUnavailable
from pytest_gpucheck.backends.cuda_python.backend import CudaPythonBackend
from pytest_gpucheck.mpi.device_ops import ops_for

backend = CudaPythonBackend(0)
try:
    backend.mpi_ops()
except BackendUnavailable as exc:
    raised = str(exc)
try:
    ops_for(backend)
except pytest.skip.Exception as exc:
    assert str(exc.msg) == raised, (exc.msg, raised)
    print(raised)
"""


@pytest.mark.slow
def test_cuda_python_mpi_ops_say_they_need_numba_cuda() -> None:
    """Its MPI operations are numba-cuda kernels: on the broken install the MPI tests skip
    on every rank with the same line (no rank fails alone and leaves the others waiting)."""
    pytest.importorskip("numba.cuda")
    pytest.importorskip("cuda.core")
    line = _python(CUDA_PYTHON_MPI_OPS)
    assert line == ("cuda-python: its MPI operations run numba-cuda kernels, and "
                    f"{_expected_line()}"), line


ONE_ELEMENT = """
from numba import cuda
from pytest_gpucheck.backends.numba_device.compile_check import one_element_kernel_problem
print(one_element_kernel_problem(cuda))
"""

PROBE_ON_A_DEVICE = FAKE_DRIVER + """
from numba import cuda
from pytest_gpucheck.backends.numba import backend as numba_backends

# What a machine with a GPU answers, up to the one-element kernel:
numba_backends.nvvm_problem = lambda: None
cuda.is_available = lambda: True
cuda.select_device = lambda index: None


def compiler_crashes(*args, **kwargs):
    raise RuntimeError("the compiler crashed")


cuda.jit = compiler_crashes
print(numba_backends.NumbaCudaBackend(0).probe().reason)
"""


@pytest.mark.slow
def test_the_one_element_kernel_runs_on_the_simulator_and_its_failure_is_one_line() -> None:
    pytest.importorskip("numba.cuda")
    assert _python(ONE_ELEMENT, simulator=True) == "None"
    import numpy as np

    assert _python(PROBE_ON_A_DEVICE) == (
        f"numba-cuda {_numba_cuda_version()} cannot compile and run a one-element kernel "
        f"with NumPy {np.__version__} and numba {_numba_version()} (RuntimeError: the "
        "compiler crashed); install releases that fit together (numba-cuda's release "
        "notes name the NumPy and numba it supports)")


def _numba_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("numba")


class _WrongKernel:
    """A fake ``numba.cuda`` whose kernel compiles but writes nothing."""

    def jit(self, function: object) -> object:
        return {(1, 1): lambda array: None}

    def to_device(self, host: object) -> object:
        import numpy as np

        class Array:
            def copy_to_host(self) -> object:
                return np.zeros(1)

        return Array()


def test_a_one_element_kernel_that_writes_nothing_is_a_broken_install() -> None:
    from pytest_gpucheck.backends.numba_device.compile_check import one_element_kernel_problem

    problem = one_element_kernel_problem(_WrongKernel())
    assert problem is not None
    assert "a one-element kernel that adds 1 to 0.0 wrote" in problem


def test_known_incompatibilities_give_their_fix_and_others_the_versions() -> None:
    from pytest_gpucheck.backends.numba_device.compile_check import (
        KNOWN_INCOMPATIBILITIES,
        describe,
    )

    assert all(known.reason and known.fix and known.cause for known in KNOWN_INCOMPATIBILITIES)
    known = describe(AttributeError("module 'numpy' has no attribute 'row_stack'"))
    assert known.endswith("(np.row_stack removed): pip install 'numpy<2.5'"), known
    other = describe(ImportError("cannot import name 'thing' from 'numpy'\nmore"))
    assert "(ImportError: cannot import name 'thing' from 'numpy')" in other, other
    assert other.startswith("numba-cuda "), other
    assert " and numba " in other, other
