"""The versions pyproject.toml declares are the versions the nox sessions test.

``.ci/constraints-oldest.txt`` (what ``nox -s oldest`` installs with) must pin exactly the
lower bound of every dependency of the core and of the ``cpu`` and ``mpi`` extras, and
the noxfile's oldest and newest Pythons must be the ends of ``requires-python``: a bound
raised in one place and not the other would leave the declared version untested.  The
noxfile is read, not imported (importing it puts pyenv's Pythons on PATH).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from user_runs import USER_CONFTEST, run_command, user_ci_project

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (the minimal and oldest sessions)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / ".ci" / "constraints-oldest.txt"
# The extras a user installs for the CPU tier; the GPU extras need a CUDA machine.
CHECKED_EXTRAS = ("cpu", "mpi")
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*>=\s*([0-9][0-9a-zA-Z.]*)\s*$")
PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([0-9][0-9a-zA-Z.]*)\s*$")


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_lower_bounds(pyproject: str) -> dict[str, str]:
    """name -> X of every ``name>=X`` of the core's dependencies and the checked extras;
    a requirement without a plain lower bound is an error (it could not be pinned)."""
    project = tomllib.loads(pyproject)["project"]
    requirements = list(project["dependencies"])
    for extra in CHECKED_EXTRAS:
        requirements += project["optional-dependencies"][extra]
    bounds = {}
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        assert match, f"{requirement!r} has no plain lower bound to pin in {CONSTRAINTS.name}"
        bounds[_name(match[1])] = match[3]
    return bounds


def pins(constraints: str) -> dict[str, str]:
    """name -> X of every ``name==X`` line (comments and blank lines aside)."""
    found = {}
    for line in constraints.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            match = PIN.match(line)
            assert match, f"{line!r} in {CONSTRAINTS.name} is not a `name==version` pin"
            found[_name(match[1])] = match[2]
    return found


def bound_problems(bounds: dict[str, str], pinned: dict[str, str]) -> list[str]:
    """One line per declared bound the constraints do not pin exactly (so `oldest` would
    test another version than the one declared)."""
    problems = []
    for name, version in sorted(bounds.items()):
        if name not in pinned:
            problems.append(f"{name}>={version} is declared but not pinned")
        elif Version(pinned[name]) != Version(version):
            problems.append(f"{name}>={version} is declared but {name}=={pinned[name]} pinned")
    return problems


def noxfile_constants() -> dict[str, Any]:
    """The noxfile's module-level literal constants (strings, tuples of strings), read
    from its syntax tree."""
    tree = ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.Tuple)):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:  # a tuple with a name in it
                continue
            found.update((t.id, value) for t in node.targets if isinstance(t, ast.Name))
    return found


#: What a core-only install lacks: a test module importing one of these at its top fails
#: collection in the minimal sessions instead of skipping.
FRAMEWORKS = ("numba", "jax", "jaxlib", "torch", "cupy", "cuda", "mpi4py", "scipy",
              "ml_dtypes", "nox")


def core_test_problems(repo: Path, paths: tuple[str, ...]) -> list[str]:
    """One line per module of the minimal sessions' share that is missing or imports a
    framework at its top (module level, outside ``try``)."""
    problems = []
    for path in paths:
        module = repo / path
        if not module.is_file():
            problems.append(f"{path} does not exist")
            continue
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                if name.split(".")[0] in FRAMEWORKS:
                    problems.append(f"{path} imports {name} at line {node.lineno}")
    return problems


def test_the_minimal_share_exists_and_imports_no_framework_at_its_top(
        tmp_path: Path) -> None:
    share = noxfile_constants()["CORE_TESTS"]
    assert len(share) >= 10
    assert core_test_problems(REPO, share) == []
    # The broken twins: a module that is gone, and one that imports torch at its top.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import os\nimport torch.nn\n",
                                                 encoding="utf-8")
    assert core_test_problems(tmp_path, ("tests/test_a.py", "tests/test_gone.py")) == [
        "tests/test_a.py imports torch.nn at line 2", "tests/test_gone.py does not exist"]


def python_range(pyproject: str) -> tuple[str, str]:
    """(oldest, newest) Python that ``requires-python`` (``>=3.A,<3.B``) admits."""
    spec = tomllib.loads(pyproject)["project"]["requires-python"]
    match = re.fullmatch(r">=3\.(\d+),\s*<3\.(\d+)", spec)
    assert match, f"requires-python {spec!r} is not of the form '>=3.A,<3.B'"
    return f"3.{match[1]}", f"3.{int(match[2]) - 1}"


def test_oldest_constraints_pin_every_declared_lower_bound() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    bounds = declared_lower_bounds(pyproject)
    assert {"numpy", "pytest", "numba", "jax", "torch", "mpi4py"} <= bounds.keys()
    assert bound_problems(bounds, pins(CONSTRAINTS.read_text(encoding="utf-8"))) == []


def test_a_raised_or_unpinned_bound_is_caught() -> None:
    """The broken twins: a bound raised in pyproject.toml alone, and a new dependency
    without its pin, each make the check fail."""
    pinned = pins(CONSTRAINTS.read_text(encoding="utf-8"))
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    raised = pyproject.replace('"numpy>=2.1"', '"numpy>=2.2"')
    added = pyproject.replace('"numpy>=2.1",', '"numpy>=2.1", "scipy>=1.10",')
    assert raised != pyproject
    assert added != pyproject
    assert bound_problems(declared_lower_bounds(raised), pinned) == [
        f"numpy>=2.2 is declared but numpy=={pinned['numpy']} pinned"]
    assert bound_problems(declared_lower_bounds(added), pinned) == [
        "scipy>=1.10 is declared but not pinned"]
    with pytest.raises(AssertionError, match="no plain lower bound"):
        declared_lower_bounds(pyproject.replace('"numpy>=2.1"', '"numpy"'))


def test_noxfile_pythons_are_the_ends_of_requires_python() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    oldest, newest = python_range(pyproject)
    constants = noxfile_constants()
    assert (constants["OLDEST_PYTHON"], constants["NEWEST_PYTHON"]) == (oldest, newest)
    classifiers = tomllib.loads(pyproject)["project"]["classifiers"]
    listed = sorted((c.rsplit(" :: ", 1)[1] for c in classifiers
                     if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)),
                    key=lambda v: int(v.split(".")[1]))
    assert (listed[0], listed[-1]) == (oldest, newest)


def docs_noxfile() -> str:
    """The noxfile example of docs/ci.md (the python block that imports nox)."""
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL)
                if "import nox" in b]
    return block


def _run_nox(project: Path, *sessions: str) -> subprocess.CompletedProcess[str]:
    """``nox -s SESSION...`` in ``project``, in this environment (``--no-venv --no-install``:
    the installs are the ones a user's machine does; what is tested here is that each
    session's commands run the user's tests and implementations, and fail with them)."""
    # Only the user's kernels and test, not every bundled suite (the main job runs those).
    return run_command([sys.executable, "-m", "nox", "--no-venv", "--no-install", "-s",
                        *sessions], project, timeout=1200,
                       extra_env={"PYTEST_ADDOPTS": "-p no:cacheprovider -k 'vector_add or "
                                                    "test_scale'"})


@pytest.mark.slow
def test_docs_noxfile_runs_the_users_tests_and_fails_with_a_broken_kernel(
    tmp_path: Path,
) -> None:
    pytest.importorskip("nox")
    project = user_ci_project(tmp_path)
    (project / "noxfile.py").write_text(docs_noxfile(), encoding="utf-8")
    listed = run_command([sys.executable, "-m", "nox", "--list"], project, timeout=120)
    assert listed.returncode == 0, listed.stderr
    for session in ("minimal-3.10", "minimal-3.13", "oldest", "newest"):
        assert f"* {session}" in listed.stdout, listed.stdout
    # In this environment (the CPU tier) both sessions run test_scale on the five CPU
    # backends with an array namespace, and the user's two vector_add implementations.
    # One call, docs/ci.md's `nox -s minimal newest` (under --no-venv nox runs minimal
    # once, in this interpreter, not once per Python).
    done = _run_nox(project, "minimal", "newest")
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert len(re.findall(r"\b7 passed\b", done.stdout)) == 2, done.stdout[-4000:]
    for session in ("minimal", "newest"):
        assert f"Session {session} was successful" in done.stderr, done.stderr[-2000:]
    # The broken twin: the same sessions fail when the user's kernel is wrong.
    (project / "conftest.py").write_text(USER_CONFTEST.replace("a + b", "a - b"),
                                         encoding="utf-8")
    done = _run_nox(project, "newest")
    assert done.returncode != 0, done.stderr[-2000:]
    assert "Session newest failed" in done.stderr, done.stderr[-2000:]
    assert "test_vector_add[numpy:mine]" in done.stdout, done.stdout[-2000:]


def ci_matrix_block() -> str:
    """The version-matrix part of .ci/run: from its ``mkdir -p .nox-logs`` to the end."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    return script[script.index("mkdir -p .nox-logs"):]


FAKE_NOX = """#!/usr/bin/env bash
# Records each call; fails the session named by FAIL_SESSION, as a failing nox does.
echo "${GPUCHECK_TORCH:-pypi} $*" >> calls.txt
[[ " $* " == *" -s $FAIL_SESSION "* ]] && { echo "pytest output of $FAIL_SESSION"; exit 1; }
echo "versions: Python 3.x, numpy 9"
"""


def _run_matrix(tmp_path: Path, fail: str) -> subprocess.CompletedProcess[str]:
    """.ci/run's matrix block under ``set -euo pipefail``, with a fake ``nox`` on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nox").write_text(FAKE_NOX, encoding="utf-8")
    (bin_dir / "nox").chmod(0o755)
    (tmp_path / "calls.txt").unlink(missing_ok=True)
    # Without GPUCHECK_TORCH: the fake records the default it stands for.
    return run_command(["bash", "-c", "set -euo pipefail\n" + ci_matrix_block()], tmp_path,
                       timeout=60, extra_env={"FAIL_SESSION": fail}, drop=["GPUCHECK_TORCH"],
                       first_on_path=[bin_dir])


def test_ci_runs_each_session_and_a_failed_one_fails_ci_with_one_line(tmp_path: Path) -> None:
    constants = noxfile_constants()
    done = _run_matrix(tmp_path, fail="none-fails")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert calls == [f"pypi --non-interactive -s minimal-{constants['OLDEST_PYTHON']}",
                     f"pypi --non-interactive -s minimal-{constants['NEWEST_PYTHON']}",
                     "none --non-interactive -s newest -- main"]
    assert done.stdout.count("ok in ") == 3, done.stdout
    # The broken twin: the first session fails; the others still run, its log's tail
    # and one line say which, and CI fails.
    done = _run_matrix(tmp_path, fail=f"minimal-{constants['OLDEST_PYTHON']}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert len((tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()) == 3
    assert f"pytest output of minimal-{constants['OLDEST_PYTHON']}" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == (
        f"version matrix FAILED: minimal-{constants['OLDEST_PYTHON']} (nox -s SESSION "
        "reruns one; logs in .nox-logs/)")


@pytest.mark.slow  # two runs of the noxfile's header command: left out of the fast loop
def test_the_not_installed_check_finds_the_line_of_a_real_header() -> None:
    """``newest`` without torch checks that torch-cpu's header line says why it is
    skipped; that check once read a ``-q`` run, which prints no header, and failed the
    session although the line was right.  Run as the noxfile runs it, here for a backend
    whose framework this environment lacks."""
    import importlib.util

    constants = noxfile_constants()
    missing = [(backend, module) for backend, module in (("cupy", "cupy"), ("torch-cpu", "torch"))
               if importlib.util.find_spec(module) is None]
    if not missing:
        pytest.skip("CuPy and torch are both installed: no backend here lacks its framework")
    backend, module = missing[0]
    # -n0: a nested run from the repository's root takes the project's addopts, and what
    # is checked here is the header's line, not xdist (whose workers would collect again).
    command = [sys.executable, *constants["HEADER_RUN"][1:], "-n0"]
    done = run_command(command, REPO, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    pattern = constants["NOT_INSTALLED_LINE"]
    assert re.search(pattern.format(backend=backend, module=module), done.stdout,
                     re.MULTILINE), done.stdout[:3000]
    # ... and not for a backend whose framework is there (NumPy always is).
    assert not re.search(pattern.format(backend="numpy", module="numpy"), done.stdout,
                         re.MULTILINE)
    # The -q run the check once read has no such line at all.
    quiet = run_command([*command, "-q"], REPO, timeout=900)
    assert not re.search(pattern.format(backend=backend, module=module), quiet.stdout,
                         re.MULTILINE)

