"""The version sets this project declares, each one tested by name (``pip install nox``).

    nox -s minimal      # the core only (NumPy is its one framework), Python 3.10 and 3.13
    nox -s oldest       # every declared lower bound (.ci/constraints-oldest.txt), Python 3.10
    nox -s newest       # every framework at its newest release, no pre-releases, Python 3.13
    nox -s full         # what .ci/run installs and tests: the CPU tier on Python 3.11

Each session runs the main job (``python -m pytest conformance --gpu-backends=all``), then
the part of the plugin's own test suite that fits it (``minimal``: CORE_TESTS, the core's
share; ``oldest`` and ``newest``: the fast tests, ``-m "not slow"``); a test that needs a
framework the session did not install skips with the reason.  Arguments after ``--`` select:
``main`` runs the main job only, ``tests`` the test suite only, and anything else is
passed to both pytest commands (``nox -s minimal -- -x``).  Each session first prints the
versions it resolved (the line ``versions: ...``).

torch: PyPI's Linux torch is the CUDA build (about 6 GB with its ``nvidia-*`` packages and
triton), PyTorch's CPU build lives on PyTorch's own index.  ``oldest`` and ``newest`` take
torch from where ``GPUCHECK_TORCH`` says: ``pypi`` (the default: whatever the configured
indexes give, on Linux the CUDA build, which runs the ``torch-cpu`` backend as well),
``none`` (no torch: the ``torch-cpu`` backend is skipped with its reason, which the
session checks), or an index URL such as ``https://download.pytorch.org/whl/cpu``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
OLDEST_CONSTRAINTS = ROOT / ".ci" / "constraints-oldest.txt"

# The supported Pythons; tests/project/test_nox_sessions.py checks them against pyproject.toml.
OLDEST_PYTHON = "3.10"
NEWEST_PYTHON = "3.13"

# What the plugin's own tests import beyond the core (the `test` extra less the linters,
# the type checker and NVRTC, which the full set brings): a session without them would
# skip whole test modules for want of a YAML parser rather than of a framework, and the
# tests that run the bundled suites pass `-n0` (undoing a CI's `-n`), which needs xdist.
TEST_RUNNER_NEEDS = ("pytest-xdist>=3.5", "pyyaml>=6", "setuptools>=77",
                     "tomli>=2; python_version < '3.11'")

# The minimal sessions' share of the plugin's own tests: the modules about what a core-only
# user meets (loading the plugin, options and bad input, the user's workflow, verdicts,
# reports, the NumPy reference kernels, the benchmark statistics, this matrix).  Their
# tests that name another framework's backend skip with the import that failed;
# tests/project/test_nox_sessions.py checks that each module exists and imports no framework
# at its top (which would fail collection, not skip).
CORE_TESTS = (
    "tests/plugin/test_plugin_loading.py",
    "tests/plugin/test_options.py",
    "tests/plugin/test_verdicts_bad_input.py",
    "tests/plugin/test_user_workflow.py",
    "tests/plugin/test_fixtures_and_markers.py",
    "tests/conformance/test_conformance_parametrization.py",
    "tests/conformance/test_conformance_rejects_broken.py",
    "tests/checking/test_assertions.py",
    "tests/checking/test_tolerance.py",
    "tests/checking/test_strategies.py",
    "tests/checking/test_randomness.py",
    "tests/plugin/test_registry.py",
    "tests/conformance/test_reference_kernels.py",
    "tests/plugin/test_report.py",
    "tests/plugin/test_report_sections.py",
    "tests/bench/test_bench_stats.py",
    "tests/bench/test_bench_gate.py",
    "tests/bench/test_bench_baseline.py",
    "tests/bench/test_bench_history.py",
    "tests/checking/test_guards.py",
    "tests/project/test_layers.py",
    "tests/project/test_nox_sessions.py",
)

# The frameworks `newest` brings to their newest release (the cpu and mpi extras less torch,
# which GPUCHECK_TORCH decides) and the packages whose versions every session prints.
NEWEST_FRAMEWORKS = ("numpy", "numba", "numba-cuda", "jax", "jaxlib", "mpi4py", "mpich")
REPORTED = ("numpy", "pytest", "hypothesis", "pytest-benchmark", "numba", "numba-cuda",
            "llvmlite", "jax", "jaxlib", "ml_dtypes", "torch", "mpi4py", "mpich", "scipy")

MAIN_JOB = ("python", "-m", "pytest", "conformance", "--gpu-backends=all",
            "-p", "no:cacheprovider", "-q")
TEST_SUITE = ("python", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs")
# The run whose header has a line per backend: no -q, under which pytest prints no header
# (with -q this check once failed although torch-cpu's line said the right thing).
HEADER_RUN = ("python", "-m", "pytest", "conformance", "--gpu-backends=all",
              "-p", "no:cacheprovider", "--collect-only")
# A backend's header line when its framework is not installed, as a pattern with the
# backend's name and the module's in it (tests/project/test_nox_sessions.py runs it on a real
# header).
NOT_INSTALLED_LINE = r"^\s*{backend}\s+skipped: {module} is not installed"

VERSIONS_SCRIPT = """
import importlib.metadata as m, platform, sys
found = []
for name in sys.argv[1:]:
    try:
        found.append(f"{name} {m.version(name)}")
    except m.PackageNotFoundError:
        pass
print(f"versions: Python {platform.python_version()}, " + ", ".join(found))
"""



def _find_pyenv_pythons() -> None:
    """Put pyenv's installed Pythons on PATH when their ``pythonX.Y`` is not there.

    pyenv's shims answer only for the versions selected (``pyenv global``), so a
    machine with 3.10 to 3.13 installed under pyenv still finds one of them; nox looks for
    ``python3.10`` and the like on PATH."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    wanted = ("3.10", "3.11", "3.12", "3.13")
    found = []
    for version in wanted:
        if shutil.which(f"python{version}") is not None and _runs(f"python{version}"):
            continue
        found += sorted(str(p.parent) for p in root.glob(f"{version}.*/bin/python{version}"))[-1:]
    if found:
        os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


def _runs(python: str) -> bool:
    """Whether ``python`` starts (a pyenv shim of a version not selected exits 127)."""
    return subprocess.run([python, "-c", ""], capture_output=True, check=False).returncode == 0


_find_pyenv_pythons()
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["minimal"]


def _steps(session: nox.Session) -> tuple[bool, bool, list[str]]:
    """(run the main job, run the tests, extra pytest arguments) from ``session.posargs``."""
    args = list(session.posargs)
    wanted = {a for a in args if a in ("main", "tests")}
    extra = [a for a in args if a not in ("main", "tests")]
    return (not wanted or "main" in wanted, not wanted or "tests" in wanted, extra)


def _install_torch(session: nox.Session, *constraint: str) -> bool:
    """Install torch as GPUCHECK_TORCH says; True when it was installed."""
    where = os.environ.get("GPUCHECK_TORCH", "pypi")
    if where == "none":
        session.log("GPUCHECK_TORCH=none: torch is not installed; torch-cpu must skip")
        return False
    index = [] if where == "pypi" else ["--index-url", where]
    session.install(*constraint, *index, "torch")
    return True


def _run(session: nox.Session, *, tests: tuple[str, ...], torch_missing: bool = False,
         main_extra: tuple[str, ...] = ()) -> None:
    """Print the versions, then run the main job (with ``main_extra``) and the test suite
    (with ``tests``)."""
    session.run("python", "-c", VERSIONS_SCRIPT, *REPORTED, silent=False)
    main, suite, extra = _steps(session)
    if main:
        session.run(*MAIN_JOB, *main_extra, *extra)
    if torch_missing:
        # The backend must say why it is not there, not vanish: its line in the header of
        # a run that asks for every backend names the missing module.
        header = session.run(*HEADER_RUN, silent=True)
        pattern = NOT_INSTALLED_LINE.format(backend="torch-cpu", module="torch")
        line = re.search(pattern + ".*$", str(header), re.MULTILINE)
        if line is None:
            session.error("torch is not installed, yet torch-cpu's line does not say so")
        session.log(line[0].strip())
    if suite:
        session.run(*TEST_SUITE, *tests, *extra)


@nox.session(python=[OLDEST_PYTHON, NEWEST_PYTHON])
def minimal(session: nox.Session) -> None:
    """The core alone, as `pip install pytest-gpucheck` gives it: NumPy is the only framework.

    The tests are CORE_TESTS, subprocess tests (`slow`) included: loading the plugin, the
    user's workflow and the verdict rules need no framework, and they are what a new
    user meets first."""
    session.install("-e", ".", *TEST_RUNNER_NEEDS)
    _run(session, tests=CORE_TESTS)


@nox.session(python=OLDEST_PYTHON)
def oldest(session: nox.Session) -> None:
    """Every declared lower bound, pinned by .ci/constraints-oldest.txt (kept equal to
    pyproject.toml's bounds by tests/project/test_nox_sessions.py), on the oldest Python."""
    constraint = ("-c", str(OLDEST_CONSTRAINTS))
    torch = _install_torch(session, *constraint)
    session.install(*constraint, "-e", ".[cpu,mpi]", *TEST_RUNNER_NEEDS, "scipy")
    _run(session, tests=("-m", "not slow"), torch_missing=not torch)


@nox.session(python=NEWEST_PYTHON)
def newest(session: nox.Session) -> None:
    """Every framework at its newest release (no pre-releases) on the newest Python."""
    torch = _install_torch(session, "--upgrade")
    session.install("--upgrade", "--upgrade-strategy", "eager", "-e", ".[mpi]",
                    *NEWEST_FRAMEWORKS, *TEST_RUNNER_NEEDS, "scipy")
    _run(session, tests=("-m", "not slow"), torch_missing=not torch)


@nox.session(python="3.11")
def full(session: nox.Session) -> None:
    """What .ci/run installs: torch 2.13.0 (its CPU build where a wheel of it is at hand, as
    in CI), the cpu, mpi and test extras; then the main job and the whole test suite."""
    session.install("torch==2.13.0")
    session.install("-e", ".[cpu,mpi,test]")
    _run(session, tests=())


if __name__ == "__main__":
    sys.exit("run the sessions with nox: pip install nox; nox -s minimal")
