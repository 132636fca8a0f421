"""``--gpu-isolate``: one bad kernel costs one test.

Temporary projects run as ``python -m pytest`` in a subprocess, as users run
them.  The crashes are real (``ctypes.string_at(0)``, ``os._exit(3)``,
``os.abort()``); the poisoned context is the documented test hook
``inject_sticky_error``, which makes the backend's health probe and every
later test on it fail, as a CUDA sticky error does.  With isolation there is
no cascaded failure and each crash is reported on the test that caused it;
without it the cascade is visible (what the option buys).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import user_runs
from user_runs import LEAN_ENV, LEAN_PLUGINS, XDIST_PLUGIN, junit_outcomes

# Every test here runs a temporary project in a subprocess.
pytestmark = pytest.mark.slow

RUN_LIMIT = 400
#: Two host backends, which share the host's worker (so it is poisoned and replaced twice
#: in a row), and the simulator, which has its own worker.  The injected error is read by
#: backend name before any framework call (``processes.worker.health_problem``), so JAX
#: and PyTorch would add their imports to every replacement and no other code path.
POISONED_BACKENDS = ("numpy", "numba-cpu", "numba-cudasim")

CRASHES = """
import ctypes
import os

from pytest_gpucheck.processes import inject_sticky_error


def test_1_poisons(gpu_backend):
    inject_sticky_error(gpu_backend.name, "CUDA_ERROR_ILLEGAL_ADDRESS (injected)")
    assert False, "kernel wrote out of bounds"


def test_2_passes(gpu_backend):
    pass


def test_3_segfault(gpu_backend):
    ctypes.string_at(0)


def test_4_passes(gpu_backend):
    pass


def test_5_exits(gpu_backend):
    os._exit(3)


def test_6_passes(gpu_backend):
    pass


def test_7_aborts(gpu_backend):
    os.abort()


def test_8_passes(gpu_backend):
    pass
"""

STICKY = """
from pytest_gpucheck.processes import inject_sticky_error


def test_1_poisons(gpu_backend):
    inject_sticky_error(gpu_backend.name, "CUDA_ERROR_ILLEGAL_ADDRESS (injected)")
    assert False, "kernel wrote out of bounds"


def test_2_passes(gpu_backend):
    assert gpu_backend.to_host(gpu_backend.full((2,), 1.0, "float32")).sum() == 2


def test_3_passes(gpu_backend):
    pass
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return user_runs.run_pytest(project, *LEAN_PLUGINS, *args, timeout=RUN_LIMIT,
                                extra_env=LEAN_ENV)


#: One xdist worker: the crashes run through xdist's worker as under ``-n 2`` (a worker
#: whose isolation worker dies and is replaced), at one process less and its own
#: isolation workers less.
@pytest.mark.parametrize("xdist", [(), (*XDIST_PLUGIN, "-n", "1")], ids=["serial", "xdist"])
def test_each_crash_costs_its_own_test(tmp_path: Path, xdist: tuple[str, ...]) -> None:
    (tmp_path / "test_crashes.py").write_text(CRASHES)
    result = run_pytest(tmp_path, "--gpu-backends=numpy", "--gpu-isolate=backend",
                        "--junitxml=junit.xml", *xdist)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "4 failed, 4 passed" in result.stdout, output
    outcomes = junit_outcomes(tmp_path / "junit.xml")
    assert {name: kind for name, (kind, _) in outcomes.items()} == {
        f"test_{n}[numpy]": "failure" if n.split("_")[0] in "1357" else "passed"
        for n in ("1_poisons", "2_passes", "3_segfault", "4_passes", "5_exits", "6_passes",
                  "7_aborts", "8_passes")}
    assert "killed by signal 11 (SIGSEGV) while running this test" in outcomes[
        "test_3_segfault[numpy]"][1]
    assert "exited with code 3 while running this test" in outcomes["test_5_exits[numpy]"][1]
    assert "killed by signal 6 (SIGABRT) while running this test" in outcomes[
        "test_7_aborts[numpy]"][1]
    assert "the worker was replaced" in result.stdout


def test_a_poisoned_worker_is_replaced_for_each_backend(tmp_path: Path) -> None:
    (tmp_path / "test_sticky.py").write_text(STICKY)
    result = run_pytest(tmp_path, f"--gpu-backends={','.join(POISONED_BACKENDS)}",
                        "--gpu-isolate=backend", "-rA")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert (f"{len(POISONED_BACKENDS)} failed, {2 * len(POISONED_BACKENDS)} passed"
            in result.stdout), output
    for name in POISONED_BACKENDS:
        assert f"FAILED test_sticky.py::test_1_poisons[{name}]" in result.stdout
        assert (f"worker's health probe failed ({name}: CUDA_ERROR_ILLEGAL_ADDRESS "
                "(injected))") in result.stdout, name
    assert "StickyError" not in result.stdout


def test_without_isolation_the_cascade_is_visible(tmp_path: Path) -> None:
    """The twin: the same project in one process poisons every later test."""
    (tmp_path / "test_sticky.py").write_text(STICKY)
    result = run_pytest(tmp_path, "--gpu-backends=numpy,numba-cudasim", "--gpu-isolate=none")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "2 failed, 4 errors" in result.stdout, output
    assert "StickyError: numpy: CUDA_ERROR_ILLEGAL_ADDRESS (injected)" in result.stdout


def test_auto_isolates_nothing_without_a_gpu(tmp_path: Path) -> None:
    """The default (auto) runs CPU backends in-process: the cascade shows with no option."""
    (tmp_path / "test_sticky.py").write_text(STICKY)
    result = run_pytest(tmp_path, "--gpu-backends=numpy")
    assert "1 failed, 2 errors" in result.stdout, result.stdout + result.stderr


def test_a_bad_mode_is_a_usage_error(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, "--gpu-isolate=sometimes")
    assert result.returncode == 4
    assert result.stderr.strip() == ("ERROR: --gpu-isolate='sometimes' is not valid; use auto, "
                                     "none, backend or test, e.g. --gpu-isolate=auto")
