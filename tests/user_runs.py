"""Running a temporary project the way a user does (``python -m pytest`` in a subprocess)
and reading its JUnit file: the one way the suite's tests start a user's run.

:func:`user_env` is the environment of every such run, with one rule for what it does
not inherit from this test session (:data:`NOT_THE_USERS`); :func:`run_pytest` runs
pytest in a project folder in it, bounded by a timeout; :func:`run_command` runs any
other command a user types there (a script, ``mpiexec``, a printed rerun line) in the
same environment; :func:`start_command` starts one and hands back the running process
(for a test that signals or kills it, or reads its lines as they come);
:func:`junit_outcomes` reads the outcomes of a run's JUnit file; :func:`assert_lines`,
:func:`assert_no_line` and :func:`assert_outcomes` check a run's output with pytest's own
line matcher and summary parser (pytester's ``fnmatch_lines``, ``no_fnmatch_line``,
``assert_outcomes``).  Tests whose point is a run in this process keep pytester's
in-process runs.  No other test file starts a process
or filters the environment itself (tests/project/test_user_runs_used.py).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import subprocess
import sys
import sysconfig
import venv
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from _pytest.pytester import LineMatcher, RunResult
from _pytest.pytester_assertions import assert_outcomes as _assert_outcomes

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
#: A user's correct ``vector_add`` on numba-cpu (an ``@njit`` loop), for a project's
#: conftest.py that imports ``numba`` and ``pytest_gpucheck``.
NUMBA_CPU_VECTOR_ADD = '''
@numba.njit
def _add_loop(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


@pytest_gpucheck.implements("vector_add", backend="numba-cpu", name="mine")
def add_numba_cpu(a, b, out):
    _add_loop(a, b, out)
'''


def numba_elementwise(name: str, args: str, element: str) -> str:
    """Code for a user's conftest.py (which imports ``njit`` and ``cuda`` from numba, and
    pytest_gpucheck) that registers the kernel ``out[i] = ELEMENT`` of the arrays ``args``
    as ``name``, implementation ``mine``, on numba-cpu (an ``@njit`` loop) and on
    numba-cudasim (a ``@cuda.jit`` kernel, launched with the harness's ``launch``)."""
    return f'''
@njit
def _{name}_loop({args}, out):
    for i in range(out.shape[0]):
        out[i] = {element}


@pytest_gpucheck.implements("{name}", backend="numba-cpu", name="mine")
def {name}_numba({args}, out):
    _{name}_loop({args}, out)


@cuda.jit
def _{name}_kernel({args}, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = {element}


@pytest_gpucheck.implements("{name}", backend="numba-cudasim", name="mine")
def {name}_sim({args}, out, launch):
    _{name}_kernel[launch.grid, launch.block]({args}, out)
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


#: The one rule for what a user's run does not inherit from this test session: what
#: pytest, pytest-xdist and this session's plugin set for their own children (``PYTEST_*``:
#: ``PYTEST_XDIST_WORKER`` made a run take itself for an xdist worker, the plugin's
#: ``PYTEST_GPUCHECK_*`` made it a child of ours; ``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS``),
#: the simulator switch a simulator child runs under (``NUMBA_ENABLE_CUDASIM``), what the
#: CI job running this suite set for itself (``CI``, ``GITHUB_*``: annotations and step
#: summaries are the job's, not a test's run's), and what points this interpreter or its
#: devices elsewhere (``PYTHONPATH``; ``XLA_FLAGS``, which tests set to fake JAX devices).
NOT_THE_USERS = ("PYTEST_", "NUMBA_ENABLE_CUDASIM", "CI", "GITHUB_", "PYTHONPATH", "XLA_FLAGS")


def write_project(root: Path, files: dict[str, str]) -> Path:
    """A user's project folder ``root`` (made) holding ``files`` (name: text)."""
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def user_env(extra_env: dict[str, str] | None = None, *, drop: Sequence[str] = (),
             first_on_path: Sequence[Path] = ()) -> dict[str, str]:
    """The environment of a user's run: this one's less :data:`NOT_THE_USERS` (names that
    start with one of them), with this interpreter's folder first on PATH (a user's
    activated environment: ``pytest`` and ``python`` are this one's), plus ``extra_env``
    (what the scenario's own files read, or the variables of a CI step).

    A scenario whose point is a variable the user does not have names it in ``drop``
    (names or shell patterns, ``*_SHA``: removed after ``extra_env`` is added); one whose
    point is the user's own commands (a shim named ``pytest``, a fake ``nox``) puts their
    folders in ``first_on_path``, before this interpreter's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_THE_USERS)}
    path = [*map(str, first_on_path), str(Path(sys.executable).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(path)
    env.update(extra_env or {})
    return {k: v for k, v in env.items()
            if not any(fnmatch.fnmatchcase(k, pattern) for pattern in drop)}


def run_command(command: Sequence[str], cwd: Path, *, timeout: float | None,
                extra_env: dict[str, str] | None = None, drop: Sequence[str] = (),
                first_on_path: Sequence[Path] = (), input: str | None = None,
                ) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``cwd`` as a user types it there: in :func:`user_env`
    (``extra_env``, ``drop`` and ``first_on_path`` as there), ``input`` on its standard
    input (else none), its output captured, bounded by ``timeout`` seconds
    (:class:`subprocess.TimeoutExpired` fails the test that waited; None: the few
    commands that end on their own, a compiler's, a probe's)."""
    return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                          env=user_env(extra_env, drop=drop, first_on_path=first_on_path),
                          timeout=timeout, check=False, input=input,
                          stdin=None if input is not None else subprocess.DEVNULL)


def start_command(command: Sequence[str], cwd: Path, *,
                  extra_env: dict[str, str] | None = None, output: bool = True,
                  new_session: bool = False) -> subprocess.Popen[str]:
    """``command`` started in ``cwd`` as :func:`run_command` runs it, not waited for: for a
    test that signals or kills the running process, or reads its lines as they come.  Its
    output and errors come on one pipe (``output=False``: thrown away, for a process whose
    lines nobody reads, which would fill the pipe); ``new_session``: its own process group,
    which the test can kill whole.  The test ends it (``kill`` and ``wait`` in a
    ``finally``)."""
    sink = subprocess.PIPE if output else subprocess.DEVNULL
    return subprocess.Popen(list(command), cwd=cwd, env=user_env(extra_env), text=True,
                            stdin=subprocess.DEVNULL, stdout=sink,
                            stderr=subprocess.STDOUT if output else subprocess.DEVNULL,
                            start_new_session=new_session)


def run_pytest(project: Path, *args: str, timeout: float,
               extra_env: dict[str, str] | None = None, launcher: Sequence[str] = (),
               python: str | Path = sys.executable) -> subprocess.CompletedProcess[str]:
    """``[LAUNCHER...] python -m pytest -p no:cacheprovider ARGS`` in ``project``, as a
    user runs it (:func:`run_command`): ``launcher`` is ``mpiexec -n 2`` and the like,
    ``python`` another environment's interpreter."""
    return run_command([*launcher, str(python), "-m", "pytest", "-p", "no:cacheprovider",
                        *args], project, timeout=timeout, extra_env=extra_env)



def assert_lines(output: str, patterns: Sequence[str]) -> None:
    """``patterns`` (fnmatch-style, in order, not necessarily adjacent) are lines of
    ``output``: pytest's own matcher, pytester's ``fnmatch_lines``, on a run's text."""
    __tracebackhide__ = True
    LineMatcher(output.splitlines()).fnmatch_lines(list(patterns))


def assert_no_line(output: str, pattern: str) -> None:
    """No line of ``output`` matches ``pattern`` (fnmatch-style): pytester's
    ``no_fnmatch_line`` on a run's text."""
    __tracebackhide__ = True
    LineMatcher(output.splitlines()).no_fnmatch_line(pattern)


def summary_counts(output: str) -> dict[str, int]:
    """The counts of a run's terminal summary line (``passed``, ``failed``, ``errors``,
    ...), read by pytest's own parser (pytester's ``parseoutcomes``)."""
    return RunResult.parse_summary_nouns(output.splitlines())


def assert_outcomes(output: str, *, passed: int = 0, skipped: int = 0, failed: int = 0,
                    errors: int = 0, xpassed: int = 0, xfailed: int = 0,
                    warnings: int | None = None, deselected: int | None = None) -> None:
    """The summary line of a run's ``output`` has exactly these counts (0: absent;
    ``warnings`` and ``deselected`` checked only when given): pytester's
    ``assert_outcomes``, on a run's text."""
    __tracebackhide__ = True
    _assert_outcomes(summary_counts(output), passed=passed, skipped=skipped, failed=failed,
                     errors=errors, xpassed=xpassed, xfailed=xfailed, warnings=warnings,
                     deselected=deselected)


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
#: 1e-5 per run, below the 1e-4 such a scenario may cost the suite.  A slowdown planted
#: beside it must be large: at six pairs and one look (5e-6 for one benchmark, t = 20.6
#: on 5 degrees of freedom) a 2x one stays beyond the interval only while the
#: between-pair SD is under 8.2% (tests/bench/test_bench_family_run.py plants 1000x).
#: Nothing is run again: a flagged run fails its test.  The scenarios' projects set
#: ``gpu_bench_budget = 1``: one look (at half the level, bench/sequential.py), as they
#: time it; the later looks are tests/bench/test_bench_sequential.py's.
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


#: This checkout's root: where a test runs the commands that need no project of their own
#: (a script, a probe of what an import loads), as a developer does from the checkout.
REPO = Path(__file__).resolve().parent.parent
#: The project's scripts (scripts/), which users and CI run.
SCRIPTS = REPO / "scripts"


def load_script(name: str, as_name: str | None = None) -> ModuleType:
    """``scripts/NAME.py`` imported as a module named ``as_name`` (default ``name``; its
    functions checked one by one; the script as a user runs it is a subprocess of
    :func:`run_command`).  Registered in ``sys.modules`` before it runs: a script's
    dataclasses look their module up by name."""
    module_name = as_name or name
    spec = importlib.util.spec_from_file_location(module_name, SCRIPTS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
