"""The wheel squats no generic name: its only top-level package is ``pytest_gpucheck``.

The repository keeps ``conformance/`` and ``reference_kernels/`` at its top
level; ``pyproject.toml`` installs them as ``pytest_gpucheck.conformance`` and
``pytest_gpucheck.reference_kernels``, so a project with a ``conformance``
package of its own can neither shadow the bundled suites nor be shadowed by
them.  The tests build the wheel as a user's ``pip`` does (from a copy of the
sources, so the checkout gets no ``build/`` folder), read its file list, then
install it into a fresh virtual environment and run the bundled suites from a
project that has its own ``conformance`` package and ``reference_kernels``
module.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from user_runs import borrowing_venv, run_command

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: Repository folder -> the package it installs as (pyproject.toml's package-dir).
INSTALLED_AS = {"pytest_gpucheck": "pytest_gpucheck",
                "conformance": "pytest_gpucheck/conformance",
                "reference_kernels": "pytest_gpucheck/reference_kernels"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's wheel, built with pip from a copy of its sources."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for folder in INSTALLED_AS:
        shutil.copytree(REPO / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("wheel")
    # The environment's setuptools builds it (the test extra asks for a recent one).
    done = run_command([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(out), str(source)],
                       out, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("pytest_gpucheck-*.whl")
    return built


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    dist_info = {name for name in top if re.fullmatch(r"pytest_gpucheck-[\w.]+\.dist-info", name)}
    assert len(dist_info) == 1, top
    assert top == {"pytest_gpucheck", *dist_info}, sorted(top)


def test_every_module_of_the_three_folders_is_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"{INSTALLED_AS[path.relative_to(REPO).parts[0]]}/"
                f"{path.relative_to(REPO / path.relative_to(REPO).parts[0]).as_posix()}"
                for folder in INSTALLED_AS for path in (REPO / folder).rglob("*.py")}
    missing = sorted(expected - names)
    assert not missing, (f"not in the wheel: {missing[:5]}; add their packages to "
                         "[tool.setuptools] packages in pyproject.toml")
    assert "pytest_gpucheck/py.typed" in names


def test_the_wheel_declares_the_bundled_entry_points(wheel: Path) -> None:
    (entry_points,) = (name for name in zipfile.ZipFile(wheel).namelist()
                       if name.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "gpucheck = pytest_gpucheck.plugin" in text, text
    assert "bundled = pytest_gpucheck.conformance.implementations" in text, text
    assert "bundled = pytest_gpucheck.conformance\n" in text, text


USER_TEST = """\
import importlib


def test_my_own_packages_are_mine():
    for name in ("conformance", "reference_kernels"):
        assert importlib.import_module(name).OWNER == "my-project"
"""


def test_an_installed_wheel_runs_its_suites_beside_a_project_named_alike(
        wheel: Path, tmp_path: Path) -> None:
    # This environment's packages (pytest, NumPy, pip) are borrowed; the plugin is the wheel's,
    # which comes first on the path.
    python, site = borrowing_venv(tmp_path / "venv")
    done = run_command([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        str(wheel)], tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr

    project = tmp_path / "project"  # a user's project with modules of the same generic names
    (project / "conformance").mkdir(parents=True)
    (project / "conformance" / "__init__.py").write_text('OWNER = "my-project"\n',
                                                         encoding="utf-8")
    (project / "reference_kernels.py").write_text('OWNER = "my-project"\n', encoding="utf-8")
    (project / "test_mine.py").write_text(USER_TEST, encoding="utf-8")
    code = textwrap.dedent("""\
        import pytest_gpucheck.conformance.implementations as m
        import pytest_gpucheck.reference_kernels as r
        print(m.__file__)
        print(r.__file__)
        """)
    run = run_command([str(python), "-c", code], tmp_path, timeout=None)
    run.check_returncode()
    found = run.stdout.split()
    assert all(path.startswith(site) for path in found), (site, found)

    # `python -m pytest` puts the project's folder first on sys.path, where its own
    # `conformance` would have shadowed a top-level one of the plugin.
    result = run_command(
        [str(python), "-m", "pytest", "--gpu-conformance", "--gpu-backends=numpy",
         "-p", "no:cacheprovider", "-v", "-k", "test_vector_add[ or test_my_own"],
        project, timeout=1200)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert "test_mine.py::test_my_own_packages_are_mine PASSED" in out, out[-4000:]
    assert re.search(r"test_elementwise\.py::test_vector_add\[numpy:\w+\] PASSED", out), out[-4000:]
