"""The door for third-party implementations: the ``pytest_gpucheck.implementations`` entry points.

A package that ships implementations declares a module in that entry-point
group; installed beside the plugin, ``pytest --gpu-conformance --gpu-impls=user``
checks them with no ``conftest.py``.  The test does what such a package's
user does: it builds a tiny package, installs it with pip into a fresh
virtual environment (which sees this environment's packages, the plugin
included, through a ``.pth`` file) and runs pytest there, in a directory that
is not this checkout.  A package whose entry point cannot be imported stops
the run with one line naming it.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from user_runs import borrowing_venv, run_command

pytestmark = pytest.mark.slow

#: The CPU-tier backends whose arrays take ``a + b`` (the simulator's device arrays do not).
BACKENDS = ("numpy", "numba-cpu", "jax-cpu", "torch-cpu")

IMPLEMENTATIONS = """\
import pytest_gpucheck

for _backend in {backends!r}:
    @pytest_gpucheck.implements("vector_add", backend=_backend, name="thirdparty")
    def vector_add(a, b):
        return a + b
"""


def _package(root: Path, name: str, module: str, code: str | None) -> Path:
    """A minimal installable package declaring ``module`` as its implementations entry point."""
    package = module.split(".")[0]
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("", encoding="utf-8")
    if code is not None:
        (root / package / "impls.py").write_text(code, encoding="utf-8")
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "0.1"

        [tool.setuptools]
        packages = ["{package}"]

        [project.entry-points."pytest_gpucheck.implementations"]
        kernels = "{module}"
        """), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment that sees this one's packages (pytest, the plugin, the frameworks)."""
    where = tmp_path_factory.mktemp("thirdparty") / "venv"
    borrowing_venv(where)
    return where


def _pip_install(environment: Path, project: Path) -> None:
    done = run_command([str(environment / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--no-deps", "--no-build-isolation", "--no-index", str(project)],
                       project.parent, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr


def _pytest(environment: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_command([str(environment / "bin" / "python"), "-m", "pytest", *args], cwd,
                       timeout=1200)


def test_an_installed_package_ships_implementations(environment: Path, tmp_path: Path) -> None:
    code = IMPLEMENTATIONS.format(backends=BACKENDS)
    _pip_install(environment, _package(tmp_path / "src", "gpucheck-thirdparty-demo",
                                       "tp_kernels.impls", code))
    project = tmp_path / "project"  # a user's project: no conftest.py, not this checkout
    project.mkdir()
    # On numpy alone: the entry point is the subject, not the backends (without the option
    # the run probes every backend, importing each framework, to keep four of them).
    result = _pytest(environment, project, "--gpu-conformance", "--gpu-impls=user",
                     "--gpu-backends=numpy", "-p", "no:cacheprovider", "-v", "-k",
                     "test_vector_add[")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert "test_elementwise.py::test_vector_add[numpy:thirdparty] PASSED" in out, out
    assert "1 passed" in out, out[-2000:]


def test_a_broken_entry_point_is_one_line(environment: Path, tmp_path: Path) -> None:
    _pip_install(environment, _package(tmp_path / "src", "gpucheck-broken-demo",
                                       "tp_broken.missing", None))
    try:
        result = _pytest(environment, tmp_path, "--gpu-conformance", "-p", "no:cacheprovider")
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
        errors = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(errors) == 1, result.stderr
        assert "gpucheck-broken-demo 0.1" in errors[0], errors
        assert "'kernels' = 'tp_broken.missing'" in errors[0], errors
        assert "ModuleNotFoundError" in errors[0], errors
        assert "Traceback" not in result.stdout + result.stderr
    finally:
        # The environment is shared with the other test of this module.
        run_command([str(environment / "bin" / "python"), "-m", "pip", "uninstall", "-q",
                     "-y", "gpucheck-broken-demo"], tmp_path, timeout=None)


def test_this_checkout_registers_the_bundled_entry_points() -> None:
    import importlib.metadata

    from pytest_gpucheck.registry import IMPLEMENTATIONS_GROUP, SUITES_GROUP

    found = {(ep.group, ep.value) for group in (IMPLEMENTATIONS_GROUP, SUITES_GROUP)
             for ep in importlib.metadata.entry_points(group=group)}
    assert (IMPLEMENTATIONS_GROUP, "pytest_gpucheck.conformance.implementations") in found
    assert (SUITES_GROUP, "pytest_gpucheck.conformance") in found
