"""Running a temporary project the way a user does (``python -m pytest`` in a subprocess)
and reading its JUnit file: shared by the tests whose scenarios end in real crashes, and
by those that run the commands docs/ci.md gives users (its workflows, its noxfile)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

#: A user's project as docs/ci.md lays it out: a conftest.py that registers implementations
#: of ``vector_add`` (NumPy and PyTorch on the CPU) and a test that uses the fixtures.
USER_CONFTEST = '''
import pytest_gpucheck


@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
def vector_add(a, b, out):
    out[...] = a + b


@pytest_gpucheck.implements("vector_add", backend="torch-cpu", name="mine")
def vector_add_torch(a, b, out):
    out.copy_(a + b)
'''
USER_TEST = '''
import numpy as np


def test_scale(gpu_backend, xp):
    x = gpu_backend.to_device(np.arange(8, dtype=np.float32))
    y = xp.multiply(x, 2)
    gpu_backend.synchronize()
    np.testing.assert_array_equal(gpu_backend.to_host(y), np.arange(8, dtype=np.float32) * 2)
'''


def user_ci_project(tmp_path: Path, conftest: str = USER_CONFTEST) -> Path:
    """``tmp_path/project`` with ``conftest`` and ``tests/test_scale.py`` (USER_TEST)."""
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "conftest.py").write_text(conftest, encoding="utf-8")
    (project / "tests" / "test_scale.py").write_text(USER_TEST, encoding="utf-8")
    return project


#: A lean run: pytest loads no plugin by its entry point (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``,
#: which every process the run starts inherits) and this one by name (:data:`LEAN_PLUGINS`,
#: which the plugin hands on to its children, ``child_options.plugin_options``), for runs
#: whose scenarios use no other plugin: what they check (crashes, signals, workers, ranks)
#: never passes through hypothesis's, pytest-benchmark's or platformdirs' plugins, which
#: cost each process of a run about 1 s of CPU (hypothesis's imports all of hypothesis for
#: its ``-v`` header and its terminal summary).  A run under xdist names it too
#: (:data:`XDIST_PLUGIN`).
LEAN_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
LEAN_PLUGINS = ("-p", "pytest_gpucheck.plugin")
XDIST_PLUGIN = ("-p", "xdist.plugin")


def ci_env(variables: dict[str, str]) -> dict[str, str]:
    """The environment of a CI step that runs a user's commands: this one's, less what
    this session or its own CI set (``PYTEST_*``, the simulator switch, ``CI``,
    ``GITHUB_*``), plus the step's ``variables``, with this interpreter's folder first on
    PATH (the ``python`` the step's install made is, here, this environment's)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "NUMBA_ENABLE_CUDASIM", "CI", "GITHUB_"))}
    env.update(variables)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def run_pytest(project: Path, *args: str, timeout: float,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it: without the variables
    this test session's plugin set for its own children (``PYTEST_*``, the simulator
    switch), which would make the user's run a child of ours.  ``extra_env`` carries what
    the scenario's own files read (where to log, for example)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "NUMBA_ENABLE_CUDASIM"))}
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=project, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


#: Module code that leaves its process a free block of 8 MiB inside glibc's heap: 8000
#: objects of 1 KiB (above pymalloc's 512 bytes, so glibc's), a guard after them that
#: keeps the heap's end from shrinking, then the objects freed.
HEAP_HOLE = """\
_junk = [bytes(1024) for _ in range(8000)]
_guard = bytes(1024)
del _junk
"""

#: ``--gpu-bench-against`` options of a scenario that asserts identical code passes: the
#: gate's family level, the chance that a run of identical code fails by the gate's own
#: design (Holm's method over the run's benchmarks, pair figures normal around 0), is
#: 1e-5 per run, below the 1e-4 such a scenario may cost the suite; six pairs of
#: processes keep a 2x slowdown far beyond the interval it then needs.  Nothing is run
#: again: a flagged run fails its test.  The scenarios' projects set ``gpu_bench_budget =
#: 1``: one look (at half the level, bench/sequential.py), as they time it; the later
#: looks are tests/test_bench_sequential.py's.
IDENTICAL_CODE = ("--gpu-bench-family-level=1e-5", "-o", "gpu_bench_replicates=6")


def borrowing_venv(where: Path) -> tuple[Path, str]:
    """A virtual environment at ``where`` that sees this one's packages (pytest, NumPy, the
    frameworks) behind its own; returns its ``python`` and its site-packages folder.
    ``site.addsitedir`` also runs the borrowed folder's ``.pth`` files (an editable install,
    numba-cuda's redirector), which a plain path line would not."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    ours = sysconfig.get_path("purelib")
    Path(site, "outer.pth").write_text(f"import site; site.addsitedir({ours!r})\n",
                                       encoding="utf-8")
    return python, site


def junit_outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """test name -> (passed / failed / error / skipped, message text) from a JUnit file;
    a test reported twice fails (each item gets exactly one outcome)."""
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        assert name not in outcomes, f"{name} reported twice"
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, text = child.tag, (child.get("message") or "") + (child.text or "")
                break
        outcomes[name] = (outcome, text)
    return outcomes


#: The start of a benchmark test file: a kernel that does ``KSLOW`` times the work (the
#: environment reaches every child), so a run can plant a slowdown.
SLOW_KERNEL = """\
import os

import numpy as np

SLOW = int(os.environ.get("KSLOW", "1"))


def saxpy(x, y):
    for _ in range(SLOW):
        result = np.float32(2.5) * x + y
    return result
"""
