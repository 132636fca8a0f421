"""A client's run, kept whole: a crash on the CPU tier costs one test, and every printed
``rerun:`` line reruns its failure from the user's folder, in every process mode.

A real client (numbagg 0.9.6, Numba aggregation kernels) ran ``pytest --gpu-conformance
--gpu-impls=user`` on a machine without a GPU: an out-of-bounds write in a numba-cpu
kernel killed pytest (SIGSEGV, exit 139: no matrix, no report, no JUnit file, every
other result lost), and the rerun lines printed under isolation named the bundled suite
by an absolute path outside the project (exit 4, the user's conftest.py not loaded) or
by a file the user does not have.  The project below is that run in small: a real
``conftest.py`` registering a correct kernel, a wrong one, and a kernel that writes far
out of bounds, plus the user's own tests, run as ``python -m pytest`` in a subprocess.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from user_runs import NUMBA_CPU_VECTOR_ADD, junit_outcomes, run_command, run_pytest

pytestmark = pytest.mark.slow

RUN_LIMIT = 600

CONFTEST = '''
import numba
from numba import cuda

import pytest_gpucheck

''' + NUMBA_CPU_VECTOR_ADD + '''


@pytest_gpucheck.implements("saxpy", backend="numba-cpu", name="mine")
def saxpy(alpha, x, y, out):
    out[...] = alpha * x - y  # the bug: - y


@cuda.jit
def _saxpy_kernel(alpha, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = alpha * x[i] - y[i]  # the same bug, on the CUDA simulator


@pytest_gpucheck.implements("saxpy", backend="numba-cudasim", name="mine")
def saxpy_simulated(alpha, x, y, out):
    _saxpy_kernel[max(1, (out.size + 31) // 32), 32](alpha, x, y, out)


@numba.njit
def _far_out_of_bounds(out):
    # No bounds checks in @njit code: 2**40 elements past the end is unmapped memory.
    for i in range(out.shape[0]):
        out[i + (1 << 40)] = 1.0


@pytest_gpucheck.implements("sigmoid", backend="numba-cpu", name="mine")
def sigmoid(x, out):
    _far_out_of_bounds(out)
'''

USER_TESTS = '''
import numpy as np


def test_passes(gpu_backend):
    x = gpu_backend.to_device(np.arange(4.0))
    assert gpu_backend.to_host(x).sum() == 6.0


def test_wrong(gpu_backend):
    assert gpu_backend.name == "nothing", "the user's own check failed"
'''


#: What the run gives besides the crash (``--gpu-impls=user`` selects the backends the root
#: conftest.py registers for: numba-cpu and numba-cudasim).
FAILED = {name: "failure" for name in (
    "test_saxpy[numba-cpu:mine]", "test_saxpy[numba-cudasim:mine]", "test_wrong[numba-cpu]",
    "test_wrong[numba-cudasim]")}
PASSED = {name: "passed" for name in (
    "test_vector_add[numba-cpu:mine]", "test_passes[numba-cpu]", "test_passes[numba-cudasim]")}


def client_project(tmp_path: Path) -> Path:
    """``tmp_path/client``: the conftest.py above and ``tests/test_mine.py``."""
    project = tmp_path / "client"
    (project / "tests").mkdir(parents=True)
    (project / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (project / "tests" / "test_mine.py").write_text(USER_TESTS, encoding="utf-8")
    return project


def test_a_crash_on_the_cpu_tier_is_one_failure_by_default(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Defaults on a machine without a GPU: the out-of-bounds kernel's test fails naming
    SIGSEGV, and every other result, the matrix, the report and the JUnit file are kept
    (before: pytest died with exit 139 and wrote nothing)."""
    project, run = _run_in_mode("default", tmp_path_factory)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-4000:]
    outcomes = junit_outcomes(project / "junit.xml")
    assert outcomes["test_sigmoid[numba-cpu:mine]"][0] == "failure", output[-4000:]
    assert "killed by signal 11 (SIGSEGV)" in outcomes["test_sigmoid[numba-cpu:mine]"][1]
    assert {name: outcome for name, (outcome, _) in outcomes.items()
            if outcome != "skipped"} == {
        "test_sigmoid[numba-cpu:mine]": "failure", **FAILED, **PASSED}, output[-4000:]
    assert "gpucheck conformance matrix" in output
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    failures = {failure["nodeid"].rsplit("::", 1)[-1]: failure for failure in report["failures"]}
    assert "SIGSEGV" in failures["test_sigmoid[numba-cpu:mine]"]["reason"]
    assert set(failures) == {"test_sigmoid[numba-cpu:mine]", *FAILED}


#: The process modes a user's run can put an item in.  The defaults put the user's own
#: numba-cpu test in this process, the numba-cpu implementations in the host's isolation
#: worker and every numba-cudasim item in the simulator's child; then isolation workers
#: for every backend item; then pytest-xdist workers (each with its own children).
MODES = {
    "default": ("-n0",),
    "isolate-backend": ("--gpu-isolate=backend",),
    "xdist": ("-n", "2"),
}
#: Every mode's run: the client's run with the ci profile (derandomized draws), its JSON
#: report and JUnit file.  The report is read by the default run's test only; neither
#: option is carried into the rerun lines (reporting/rerun.py keeps the options that
#: decide which items exist and how they run), and -n0 is what a project without an ini
#: file runs anyway.
RUN_ARGS = ("--gpu-conformance", "--gpu-impls=user", "--hypothesis-profile=ci",
            "--gpu-report=report.json", "--junitxml=junit.xml")
#: The project and run of each mode, made once per module (the crash test and the rerun
#: test read the default mode's run).
_RUNS: dict[str, tuple[Path, subprocess.CompletedProcess[str]]] = {}
#: Each printed rerun line already run verbatim, and its result: every mode's project is
#: the same files, so a line that two modes print is run once, by the first.
_RERUNS: dict[str, subprocess.CompletedProcess[str]] = {}


def _run_in_mode(mode: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    if mode not in _RUNS:
        project = client_project(tmp_path_factory.mktemp(mode))
        _RUNS[mode] = project, run_pytest(project, *RUN_ARGS, *MODES[mode], timeout=RUN_LIMIT)
    return _RUNS[mode]
_RERUN = re.compile(r"^\s*(?:E\s+)?rerun: (pytest .*)$")
_COUNT = re.compile(r"(\d+) (failed|passed|errors?)\b")


def _failed_names(output: str) -> list[str]:
    return sorted(re.findall(r"^FAILED \S*?(test_\w+\[[^\]]+\])", output, re.MULTILINE))


@pytest.mark.parametrize("mode", list(MODES))
def test_every_printed_rerun_line_reruns_its_failure(
        tmp_path_factory: pytest.TempPathFactory, mode: str) -> None:
    """Each distinct ``rerun:`` line a failing run prints (the harness's, the summary's,
    a crash's, the user's own test's), run verbatim from the user's folder, fails exactly
    its item again, the same way; and the derandomized ``ci`` profile draws the same
    examples in every mode (the seed comes from the node id as the user's process names
    it).  Before: under isolation the lines named the bundled suite by an absolute path
    (exit 4, "no implementation is registered") or a file the user does not have, and the
    seed differed between modes."""
    project, run = _run_in_mode(mode, tmp_path_factory)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-4000:]
    outcomes = junit_outcomes(project / "junit.xml")
    failed = sorted(name for name, (outcome, _) in outcomes.items() if outcome == "failure")
    lines = list(dict.fromkeys(match.group(1) for line in output.splitlines()
                               if (match := _RERUN.match(line))))
    expected = sorted([*FAILED, "test_sigmoid[numba-cpu:mine]"])
    assert failed == expected, output[-4000:]
    rerun_of = {}
    for line in lines:
        names = [name for name in failed if name in line]
        assert len(names) == 1, f"{line!r} names none or several of {failed}"
        rerun_of.setdefault(names[0], []).append(line)
    assert sorted(rerun_of) == failed, f"a failure without a rerun line: {lines}"
    for name, commands in rerun_of.items():
        for command in commands:
            # The line as the user pastes it, in their folder: `pytest` is this
            # environment's (user_runs.user_env puts it first on PATH).
            if command not in _RERUNS:
                _RERUNS[command] = run_command(shlex.split(command), project,
                                               timeout=RUN_LIMIT)
            again = _RERUNS[command]
            text = again.stdout + again.stderr
            counts = {kind: int(n) for n, kind in _COUNT.findall(text.splitlines()[-1])}
            assert (again.returncode, counts) == (1, {"failed": 1}), (
                f"{command}\nexit {again.returncode}\n{text[-3000:]}")
            assert _failed_names(text) == [name], f"{command}\n{text[-3000:]}"
            if name.startswith("test_sigmoid"):
                assert "killed by signal 11 (SIGSEGV)" in text, text[-3000:]
            if "--gpu-isolate=backend" in MODES[mode]:
                assert "--gpu-isolate=backend" in command
    seeds = {case: value for case, value in _seeds(project / "junit.xml").items()
             if "vector_add" in case}
    if mode == "isolate-backend":
        in_process = run_pytest(
            project, "--gpu-conformance", "--gpu-impls=user", "--hypothesis-profile=ci",
            "--gpu-isolate=none", "-n0", "-k", "test_vector_add", "--junitxml=in-process.xml",
            timeout=RUN_LIMIT)
        assert in_process.returncode == 0, in_process.stdout[-3000:]
        assert seeds == _seeds(project / "in-process.xml"), "the ci profile's draws differ"


def _seeds(junit: Path) -> dict[str, str]:
    """test name -> its ``gpucheck.seed`` JUnit property."""
    import xml.etree.ElementTree as ET

    return {case.get("name", ""): prop.get("value", "")
            for case in ET.parse(junit).getroot().iter("testcase")
            for prop in case.iter("property") if prop.get("name") == "gpucheck.seed"}
