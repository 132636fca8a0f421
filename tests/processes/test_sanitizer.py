"""``--gpu-sanitize``: compute-sanitizer per test, checked with a fake tool.

The fake (``fake_compute_sanitizer.py``) runs the sanitized worker and writes the
real tool's records (quoted from NVIDIA's documentation) when a fake kernel plants
a bug; the test hook ``sanitize_cpu_backend_for_tests`` routes the numpy backend
through it, so attribution, crashes, errors outside any test, a missing tool and
the exit codes are all shown as a user runs pytest, without a GPU.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
import user_runs
from nvrtc_compile import compile_cuda_c
from user_runs import junit_outcomes

import pytest_gpucheck.sanitizer.plugin as sanitizer
from pytest_gpucheck.sanitizer.log import error_text, errors, records

HERE = Path(__file__).parents[1]
FAKE = HERE / "fake_compute_sanitizer.py"
RUN_LIMIT = 300
#: Each scenario's pytest runs without hypothesis's pytest plugin, which imports all of
#: hypothesis at the terminal summary (about 0.7 s of CPU a run) and plays no part in what
#: the sanitizer does: no test of these projects uses hypothesis.  (The sanitized workers
#: load it still: a child gets the run's ``-p NAME`` options, not its ``-p no:NAME``.)
LEAN = ("-p", "no:hypothesispytest")

# From NVIDIA's documentation ("memcheck_demo Output with Memcheck", "Block-level Hazards").
MEMCHECK_LOG = """========= COMPUTE-SANITIZER
Mallocing memory
========= Invalid __global__ write of size 4 bytes
=========     at unaligned_kernel()+0x100 in memcheck_demo.cu:34
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7cc43aa00001 is misaligned
=========     and is inside the nearest allocation at 0x7cc43aa00000 of size 4 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: run_unaligned() [0xacd4] in memcheck_demo
=========         Host Frame: main [0xae61] in memcheck_demo
=========
Running unaligned_kernel: no error
========= ERROR SUMMARY: 1 error
"""
RACECHECK_LOG = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sumKernel(int *)+0x90 in race.cu:41
=========     and Read access at sumKernel(int *)+0x100 in race.cu:51 [508 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


# -- units --------------------------------------------------------------------------------
def test_records_keep_each_finding_and_drop_banner_and_summaries() -> None:
    found = errors(MEMCHECK_LOG)
    assert len(found) == 1
    assert found[0][0] == "Invalid __global__ write of size 4 bytes"
    assert found[0][2] == "    by thread (0,0,0) in block (0,0,0)"
    assert "        Host Frame: main [0xae61] in memcheck_demo" in found[0]
    assert len(records(MEMCHECK_LOG)) == 3  # banner, finding, summary
    race = errors(RACECHECK_LOG)
    assert [r[0][:28] for r in race] == ["Error: Race reported between"]
    assert "[508 hazards]" in error_text(RACECHECK_LOG)
    assert errors("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") == []


#: What a sanitized numba-cuda worker logged at start-up on an H200 (2026-11-27): cuda-bindings
#: looks up each driver entry point by name and handles the refusal of those it lacks.
PROC_ADDRESS = (
    '========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on '
    "CUDA API call to cuGetProcAddress_v2.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "=========         Host Frame:  [0xd4a2] in cydriver.cpython-312-x86_64-linux-gnu.so\n"
    "=========\n")


def test_a_handled_symbol_lookup_is_no_finding_but_other_api_errors_are() -> None:
    assert errors(PROC_ADDRESS * 3) == []
    launch = PROC_ADDRESS.replace("CUDA_ERROR_INVALID_VALUE (error 1)", "CUDA_ERROR_LAUNCH_FAILED "
                                  "(error 719)").replace("cuGetProcAddress_v2", "cuCtxSynchronize")
    assert [r[0][:48] for r in errors(PROC_ADDRESS + launch)] == [
        "Program hit CUDA_ERROR_LAUNCH_FAILED (error 719)"]


def _barrier(thread: int) -> str:
    return ("========= Barrier error detected. Divergent thread(s) in warp.\n"
            "=========     at divergent+0x90\n"
            f"=========     by thread ({thread},0,0) in block (0,0,0)\n=========\n")


def test_a_finding_of_every_thread_of_a_warp_is_shown_once() -> None:
    """synccheck reported the planted divergent barrier once per thread on an H200:
    records that differ only in their thread are shown once, with the count."""
    shown = error_text("".join(_barrier(t) for t in range(16)) + _barrier(0).replace(
        "block (0,0,0)", "block (1,0,0)").replace("+0x90", "+0xa0"))
    assert shown.count("Barrier error detected") == 2, shown
    assert "by thread (0,0,0) in block (0,0,0)" in shown
    assert "(the same error in 15 more thread(s))" in shown
    assert len(errors("".join(_barrier(t) for t in range(16)))) == 16  # each one is kept


@pytest.mark.parametrize("text", ["memcheck,bogus", "", "memcheck,,racecheck", "MEMCHECK"])
def test_bad_tool_lists_are_one_line_usage_errors(text: str) -> None:
    with pytest.raises(pytest.UsageError) as raised:
        sanitizer.parse_tools(text)
    message = str(raised.value)
    assert "\n" not in message
    assert "memcheck, racecheck, initcheck, synccheck" in message


def test_tools_parse_in_order_without_repeats() -> None:
    assert sanitizer.parse_tools("racecheck,memcheck,racecheck") == ("racecheck", "memcheck")


def test_a_sanitizer_older_than_the_drivers_cuda_is_refused() -> None:
    problem = sanitizer.version_problem((2025, 2), 13000)
    assert problem is not None
    assert "needs 2025.3 or newer" in problem
    assert "sanitize-cu13" in problem
    assert sanitizer.version_problem((2025, 3), 13000) is None
    assert sanitizer.version_problem((2026, 4), 13020) is None
    assert sanitizer.version_problem((2022, 4), 12080) is None
    assert sanitizer.version_problem((2022, 3), 12000) is not None
    assert sanitizer.version_problem((2020, 1), None) is None  # no driver: nothing to check


def test_the_tool_is_found_on_path_then_toolkit_then_wheel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    _executable(toolkit / "bin" / "compute-sanitizer", "#!/bin/sh\n")
    on_path = tmp_path / "bin"
    on_path.mkdir()
    env = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(toolkit)}
    assert sanitizer.find_tool(env) == toolkit / "bin" / "compute-sanitizer"
    _executable(on_path / "compute-sanitizer", "#!/bin/sh\n")
    env["PATH"] = str(on_path)
    assert sanitizer.find_tool(env) == on_path / "compute-sanitizer"
    # The wheel (nvidia-cuda-sanitizer-api's CUDA 13 layout) in a site folder of its own,
    # found first: the `nvidia` package exists only where some nvidia-* wheel is
    # installed (none in a core-only environment; older ones ship it as a regular
    # package, which hides namespace portions, hence the __init__.py here too).
    site = tmp_path / "site"
    wheel_tool = site / "nvidia" / "cu13" / "bin" / "compute-sanitizer"
    wheel_tool.parent.mkdir(parents=True)
    (site / "nvidia" / "__init__.py").write_text("")
    _executable(wheel_tool, "#!/bin/sh\n")
    monkeypatch.delitem(sys.modules, "nvidia", raising=False)
    monkeypatch.syspath_prepend(str(site))
    places = [str(p) for p in sanitizer.candidates({"PATH": ""})]
    assert str(wheel_tool) in places
    assert any(p.endswith("nvidia/cuda_sanitizer_api/bin/compute-sanitizer") for p in places)
    assert places.index(str(wheel_tool)) > places.index("/usr/local/cuda/bin/compute-sanitizer")
    if not Path("/usr/local/cuda/bin/compute-sanitizer").exists():
        nowhere = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(tmp_path / "none")}
        assert sanitizer.find_tool(nowhere) == wheel_tool


def test_the_version_is_read_from_the_tools_own_text(tmp_path: Path) -> None:
    tool = _fake_bin(tmp_path) / "compute-sanitizer"
    assert sanitizer.tool_version(tool) == (2026, 4)


# -- as a user runs it ----------------------------------------------------------------------
CONFTEST = """
import os

from pytest_gpucheck.sanitizer.plugin import sanitize_cpu_backend_for_tests

if os.environ.get("ROUTE_NUMPY"):
    sanitize_cpu_backend_for_tests("numpy")
"""

TESTS = """
import os

from fake_compute_sanitizer import plant, plant_api_error


def test_1_out_of_bounds(gpu_backend):
    plant("memcheck", "gather_oob(float *, float *, int)")


def test_2_clean(gpu_backend):
    pass


def test_3_race(gpu_backend):
    plant("racecheck", "block_sum_racy(float *, float *)")


def test_4_clean(gpu_backend):
    pass


def test_5_crash_after_an_error(gpu_backend):
    plant("memcheck", "crashing_kernel(float *)")
    os._exit(3)


def test_6_clean_in_a_fresh_worker(gpu_backend):
    pass


def test_7_teardown_error(gpu_backend, planted_in_teardown):
    pass


def test_8_launch_fails_after_the_error(gpu_backend, lost_context_in_teardown):
    # As on a GPU: the sanitizer stops the kernel, so the launch fails in the test, and
    # the teardown's API calls fail on the lost context.
    plant("memcheck", "stopped_kernel(float *)")
    raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")


def test_9_an_api_error_alone(gpu_backend):
    plant_api_error()
"""

FIXTURE = """

import pytest
from fake_compute_sanitizer import plant, plant_api_error


@pytest.fixture
def planted_in_teardown():
    yield
    plant("memcheck", "teardown_kernel(float *)")


@pytest.fixture
def lost_context_in_teardown():
    yield
    plant_api_error()
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _fake_bin(where: Path) -> Path:
    folder = where / "fake-bin"
    folder.mkdir(exist_ok=True)
    _executable(folder / "compute-sanitizer",
                f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    return folder


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST + FIXTURE, encoding="utf-8")
    (project / "test_kernels.py").write_text(TESTS, encoding="utf-8")
    shutil.copy(FAKE, project / "fake_compute_sanitizer.py")
    return project


def _env(tmp_path: Path, *, fake: bool = True, route: bool = True,
         **extra: str) -> dict[str, str]:
    path = os.environ["PATH"]
    env = {"PATH": f"{_fake_bin(tmp_path)}:{path}" if fake else path,
           "CUDA_HOME": str(tmp_path / "no-toolkit"), "CUDA_PATH": str(tmp_path / "no-toolkit")}
    if route:
        env["ROUTE_NUMPY"] = "1"
    env.update(extra)
    return env


@pytest.mark.slow
def test_each_error_fails_the_test_that_ran_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    junit = tmp_path / "junit.xml"
    done = user_runs.run_pytest(
        project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck,racecheck", "-rA",
        f"--junitxml={junit}", timeout=RUN_LIMIT, extra_env=_env(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    outcomes = junit_outcomes(junit)
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_1_out_of_bounds[numpy]": "failure",
        "test_2_clean[numpy]": "passed",
        "test_3_race[numpy]": "failure",
        "test_4_clean[numpy]": "passed",
        "test_5_crash_after_an_error[numpy]": "failure",
        "test_6_clean_in_a_fresh_worker[numpy]": "passed",
        "test_7_teardown_error[numpy]": "error",
        # One verdict: the teardown's failed API calls follow from the call's finding.
        "test_8_launch_fails_after_the_error[numpy]": "failure",
        "test_9_an_api_error_alone[numpy]": "failure",
    }, output
    assert "gpucheck: sanitizing numpy with memcheck, racecheck" in output
    assert "memory pools off in the sanitized workers" in output
    assert "hypothesis examples per backend" in output
    assert "gpucheck-ci 12 -> 3" in output
    oob = outcomes["test_1_out_of_bounds[numpy]"][1]
    for line in ("compute-sanitizer (memcheck) reported errors during the call",
                 "Invalid __global__ read of size 4 bytes",
                 "at gather_oob(float *, float *, int)+0x90",
                 "by thread (1,0,0) in block (3,0,0)",
                 "Address 0x7cc43a800404 is out of bounds",
                 "Host Frame: cuLaunchKernel"):
        assert line in oob, oob
    assert "Race reported" not in oob  # racecheck's findings are its own test's
    race = outcomes["test_3_race[numpy]"][1]
    assert "compute-sanitizer (racecheck)" in race, race
    assert "[508 hazards]" in race, race
    assert "-- gpucheck sanitizer (memcheck) --" in output  # the report section
    crash = outcomes["test_5_crash_after_an_error[numpy]"][1]
    assert "exited with code 3 while running this test" in crash, crash
    assert "crashing_kernel(float *)" in output  # the sanitizer's last words, with it
    teardown = outcomes["test_7_teardown_error[numpy]"][1]
    assert "during the teardown" in teardown, teardown
    assert "teardown_kernel" in teardown, teardown
    stopped = outcomes["test_8_launch_fails_after_the_error[numpy]"][1]
    assert stopped.startswith("compute-sanitizer (memcheck) reported errors during the call"
                              ), stopped  # the cause leads, JUnit's message too
    assert "The test failed too" in stopped
    assert "unspecified launch failure" in stopped
    # test_7's teardown is the only error: test_8's is no second verdict.
    assert "5 failed, 4 passed, 1 error in" in output, output
    alone = outcomes["test_9_an_api_error_alone[numpy]"][1]
    assert "Program hit CUDA_ERROR_LAUNCH_FAILED" in alone, alone
    assert "outside any test" not in output


@pytest.mark.slow
def test_an_error_outside_any_test_fails_the_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = user_runs.run_pytest(
        project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck", "-k", "clean",
        timeout=RUN_LIMIT,
        extra_env=_env(tmp_path, FAKE_SANITIZER_LEAK_AT_EXIT="1"))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "3 passed" in output, output
    assert "compute-sanitizer (memcheck) reported errors outside any test" in output
    assert "Leaked 1,024 bytes at 0x7879c0800000" in output


@pytest.mark.slow
@pytest.mark.parametrize(("selected", "fails_the_run"), [
    ("out_of_bounds", False),  # after a test's finding: the lost context, that finding again
    ("clean", True),           # with no finding before it: a finding of its own
])
def test_failed_api_calls_at_exit(tmp_path: Path, selected: str, fails_the_run: bool) -> None:
    """As after the planted out-of-bounds read on an H200: the worker's module unload and
    synchronize at exit fail on the context the sanitizer stopped a kernel in."""
    project = _project(tmp_path)
    done = user_runs.run_pytest(
        project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck", "-k", selected,
        timeout=RUN_LIMIT, extra_env=_env(tmp_path, FAKE_SANITIZER_API_ERROR_AT_EXIT="1"))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output  # the out-of-bounds test fails, or the run does
    assert ("reported errors outside any test" in output) is fails_the_run, output


@pytest.mark.slow
def test_without_the_tool_a_gpu_run_stops_before_collection(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = user_runs.run_pytest(project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck",
                                timeout=RUN_LIMIT, extra_env=_env(tmp_path, fake=False))
    assert done.returncode == 4, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f"ERROR: {sanitizer.missing_tool_message()}"], done.stderr
    assert "collected" not in done.stdout
    # The command docs/reliability.md prints, on a machine without the tool (or a GPU).
    done = user_runs.run_pytest(project, "--gpu-sanitize=memcheck", "--gpu-backends=gpu",
                                timeout=RUN_LIMIT, extra_env=_env(tmp_path, fake=False,
                                                                  route=False))
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.strip() == f"ERROR: {sanitizer.missing_tool_message()}"


@pytest.mark.slow
def test_an_old_or_broken_tool_and_a_bad_tool_name_exit_4(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = user_runs.run_pytest(project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memchek",
                                timeout=RUN_LIMIT, extra_env=_env(tmp_path))
    assert done.returncode == 4, done.stderr
    assert "unknown tool 'memchek'" in done.stderr, done.stderr
    done = user_runs.run_pytest(
        project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck", timeout=RUN_LIMIT,
        extra_env=_env(tmp_path, FAKE_SANITIZER_VERSION="no version here\n"))
    assert done.returncode == 4, done.stderr
    assert "without a version line" in done.stderr, done.stderr
    done = user_runs.run_pytest(project, *LEAN, "--gpu-backends=numpy", "--gpu-isolate=none",
                                "--gpu-sanitize=memcheck", timeout=RUN_LIMIT,
                                extra_env=_env(tmp_path))
    assert done.returncode == 4, done.stderr
    assert "drop --gpu-isolate=none" in done.stderr, done.stderr


@pytest.mark.slow
def test_without_a_gpu_backend_it_says_nothing_was_sanitized(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = user_runs.run_pytest(project, *LEAN, "--gpu-backends=numpy", "--gpu-sanitize=memcheck",
                                "-k", "not crash and not launch_fails", timeout=RUN_LIMIT,
                                extra_env=_env(tmp_path, fake=False, route=False))
    output = done.stdout + done.stderr
    # The planted bugs pass: without the sanitizer nothing sees them.
    assert done.returncode == 0, output
    assert "7 passed" in output, output
    assert ("gpucheck: --gpu-sanitize: no GPU backend selected, nothing is sanitized"
            in output)


PLANTED_CONFTEST = """
from fake_compute_sanitizer import plant

from pytest_gpucheck.sanitizer.plugin import (
    on_planted_bug_for_tests,
    sanitize_cpu_backend_for_tests,
)

sanitize_cpu_backend_for_tests("numpy")


def _kernel(tool, case, bug):
    if bug:  # the twin is clean
        plant(tool, case + "(float *, float *, int)")


on_planted_bug_for_tests(_kernel)
"""


@pytest.mark.slow
def test_planted_bugs_fail_under_their_tool_and_twins_pass(tmp_path: Path) -> None:
    from pytest_gpucheck.conformance import sanitizer_planted

    project = tmp_path / "project"
    project.mkdir()
    # The planted file is outside the project, so its hooks are a plugin (-p), not a
    # conftest.py (pytest loads those above the paths it is given).
    (project / "planted_hooks.py").write_text(PLANTED_CONFTEST, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    shutil.copy(FAKE, project / "fake_compute_sanitizer.py")
    planted = sanitizer_planted.__file__
    junit = tmp_path / "junit.xml"
    own = ("-p", "planted_hooks", "--rootdir", str(project), "-c", str(project / "pytest.ini"))
    done = user_runs.run_pytest(
        project, *LEAN, *own, "--gpu-backends=numpy", f"--gpu-sanitize={','.join(sanitizer.TOOLS)}",
        planted, f"--junitxml={junit}", timeout=RUN_LIMIT, extra_env=_env(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    outcomes = junit_outcomes(junit)
    for case, (tool, _) in sanitizer_planted.CASES.items():
        outcome, text = outcomes[f"test_planted[numpy-{case}-bug]"]
        assert outcome == "failure", (case, output)
        assert f"compute-sanitizer ({tool}) reported errors during the call" in text, text
        assert case in text
        assert outcomes[f"test_planted[numpy-{case}-twin]"][0] == "passed", output
    assert len(outcomes) == 2 * len(sanitizer_planted.CASES)
    # The GPU tier script's verdict on the same file.
    check = user_runs.run_command([sys.executable, str(user_runs.SCRIPTS /
                                                       "check_sanitizer_planted.py"), str(junit)],
                                  user_runs.REPO, timeout=RUN_LIMIT)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok    numpy-syncthreads-in-branch-bug: caught by synccheck" in check.stdout
    # Without the sanitizer the planted tests do not run (they would pass: nothing sees
    # these bugs without it).
    done = user_runs.run_pytest(project, *LEAN, *own, "--gpu-backends=numpy", planted, "-rs",
                                timeout=RUN_LIMIT, extra_env=_env(tmp_path))
    assert done.returncode == 0, done.stdout
    assert "8 skipped" in done.stdout
    assert "run only in a --gpu-sanitize worker" in done.stdout


def test_the_planted_cupy_kernels_compile_with_nvrtc() -> None:
    """The CUDA C that ``sanitizer_planted`` hands CuPy's ``RawModule`` compiles with
    NVRTC (no GPU, no driver), and its PTX has each kernel CuPy looks up by name."""
    core = pytest.importorskip("cuda.core", reason="cuda.core is not installed here")
    from pytest_gpucheck.conformance import sanitizer_planted

    options = core.ProgramOptions(arch="sm_90", std="c++17")
    ptx = compile_cuda_c(sanitizer_planted.CUDA_C, options, "ptx").decode()
    for name in sanitizer_planted.CUPY_NAMES.values():
        assert f".entry {name}(" in ptx, f"{name} is not a kernel of the planted CUDA C"
