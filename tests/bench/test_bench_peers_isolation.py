"""The stored gate's fresh processes start no isolation worker.

``--gpu-bench-save`` / ``--gpu-bench-compare`` time each benchmark in fresh processes
(benchmark peers).  A peer runs its items itself, but with ``--gpu-isolate=backend`` (an
ini's addopts, or ``auto`` on a GPU machine) the isolation router registered in it too,
and its ``pytest_runtestloop`` (before the peer server's) started a worker for the
session's items: one idle child pytest per fresh process, on a GPU with every framework
imported and a CUDA context of its own, beside the rounds being timed.  Counted here on
the CPU, as a user runs it: the benchmark (on a backend, so that the router claims it)
writes down, from inside each process that runs it, that process's child processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bench_projects import WITHOUT_HYPOTHESIS, with_two_processes
from test_bench_plugin import INI
from user_runs import run_pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")]

TEST_FILE = '''
import json
import os
from pathlib import Path


def children():
    """Command lines of this process's child processes (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == os.getpid():
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\\0", b" ")
                             .decode(errors="replace"))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_kernel(gpu_benchmark, gpu_backend):
    gpu_benchmark(lambda: sum(range(200)))
    me = Path("/proc/self/cmdline").read_bytes().replace(b"\\0", b" ").decode()
    out = Path(os.environ["GPUCHECK_TEST_TREE"]) / f"{os.getpid()}.json"
    out.write_text(json.dumps({"peer": "--gpu-bench-peer" in me, "children": children()}))
'''


def test_the_stored_modes_fresh_processes_start_no_isolation_worker(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text(
        with_two_processes(INI) + WITHOUT_HYPOTHESIS.replace("\n", " --gpu-isolate=backend\n"))
    (project / "test_bench.py").write_text(TEST_FILE)
    tree = tmp_path / "tree"
    tree.mkdir()
    done = run_pytest(project, "--gpu-backends=numpy", "--gpu-bench-save",
                      "--gpu-bench-baseline=baselines",
                      timeout=600, extra_env={"GPUCHECK_TEST_TREE": str(tree)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = [json.loads(path.read_text()) for path in tree.glob("*.json")]
    peers = [entry for entry in seen if entry["peer"]]
    assert len(peers) == 2, seen  # gpu_bench_processes = 2: two fresh processes
    workers = [child for entry in peers for child in entry["children"]
               if "pytest" in child or sys.executable in child]
    assert workers == [], f"the fresh processes started {len(workers)} child(ren): {workers}"
