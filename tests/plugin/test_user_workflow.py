"""The documented user workflow, run the way a user runs it.

Each test writes a temporary project with a real ``conftest.py`` that
registers implementations, and runs the commands ``docs/kernels.md`` and the
README print (``pytest --gpu-conformance --gpu-impls=user ...``) in a
subprocess from that folder: no ``PYTEST_PLUGINS``, no ``PYTHONPATH``, no
internal import.  Runs that stop with a usage error before any test (a signature
off the contract, nothing registered) or print the help are in-process
(``pytester.runpytest`` from the project's folder, the same variables removed): a fresh
interpreter proves nothing more there, and each one cost an interpreter's start.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import user_runs

pytestmark = pytest.mark.slow

TWO_BACKENDS = """
import pytest_gpucheck


@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
@pytest_gpucheck.implements("vector_add", backend="numba-cpu", name="mine")
def vector_add(a, b, out):
    out[...] = a + b
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS`` in ``project``, as typed in a shell there."""
    return user_runs.run_pytest(project, *args, timeout=1200)


def run_in_process(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                   conftest: str, *args: str) -> tuple[int, str]:
    """``pytest ARGS`` in-process in pytester's folder, whose ``conftest.py`` is
    ``conftest``, without the variables :func:`run_pytest` removes: the exit code and the
    output (stdout, then stderr)."""
    for key in ("PYTEST_PLUGINS", "PYTEST_ADDOPTS", "PYTHONPATH", "CI"):
        monkeypatch.delenv(key, raising=False)
    pytester.makeconftest(conftest)
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    return int(result.ret), result.stdout.str() + "\n" + result.stderr.str()


def project(tmp_path: Path, conftest: str) -> Path:
    (tmp_path / "conftest.py").write_text(conftest, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("kernel", "definition", "fragment"), [
    ("saxpy", "def saxpy(x, y, out):\n    out[...] = x + y\n",
     "saxpy(x, y, out) does not match the contract (multiple values for argument 'out'); "
     "expected saxpy(alpha, x, y, out[, launch]), or saxpy(alpha, x, y[, launch]) returning "
     "the result (docs/kernels.md)"),
    ("vector_add", "def add(a, b, c, out):\n    out[...] = a + b\n",
     "add(a, b, c, out) does not match the contract (missing a required argument: 'c')"),
    ("index_map_1d", "def index_map(launch):\n    return None\n",
     "index_map_1d has no input to size a result from, so it must take `out`"),
    ("halo_exchange_1d", "def halo(a, width, out):\n    pass\n",
     "halo_exchange_1d updates `a` in place and takes no `out`"),
    ("histogram", "def histogram(x, bins):\n    return x\n",
     "expected histogram(x, out[, launch]), or histogram(x, nbins=...[, launch])"),
])
def test_a_signature_off_the_contract_fails_at_registration(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kernel: str,
        definition: str, fragment: str) -> None:
    conftest = (f"import pytest_gpucheck\n\n@pytest_gpucheck.implements({kernel!r}, "
                f"backend='numpy', name='mine')\n{definition}")
    code, out = run_in_process(pytester, monkeypatch, conftest, "--gpu-conformance",
                               "--gpu-impls=user")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    # One line, at the conftest's registration (line 3), no traceback.
    errors = [line for line in out.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, out
    assert errors[0].startswith(f"ERROR: conftest.py:3: {kernel} on numpy: "), errors[0]
    assert fragment in errors[0]
    assert "Traceback" not in out


def test_the_readme_command_checks_every_backend_the_user_registered(tmp_path: Path) -> None:
    # The user registered a numba-cpu implementation: without it (the core alone) it skips.
    pytest.importorskip("numba")
    result = run_pytest(project(tmp_path, TWO_BACKENDS), "--gpu-conformance", "--gpu-impls=user",
                        "-v")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "test_vector_add[numpy:mine] PASSED" in out
    assert "test_vector_add[numba-cpu:mine] PASSED" in out
    assert "gpucheck: backends numpy,numba-cpu (the backends of your registered" in out
    # Only the user's kernels: no MPI or interop suite, no "no user implementation" noise.
    assert "2 passed" in out, out
    summary = out.strip().splitlines()[-1]
    assert "failed" not in summary, summary
    assert "skipped" not in summary, summary
    for absent in ("no user implementation", "test_mpi", "test_interop"):
        assert absent not in out


def test_a_registered_backend_left_out_is_named_with_the_option(tmp_path: Path) -> None:
    result = run_pytest(project(tmp_path, TWO_BACKENDS), "--gpu-conformance", "--gpu-impls=user",
                        "--gpu-backends=numpy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("gpucheck: not checked: your vector_add:mine on numba-cpu "
            "(numba-cpu is not selected)") in result.stdout
    assert "gpucheck: to check them too, run with --gpu-backends=numpy,numba-cpu" \
        in result.stdout


def test_unavailable_backends_skip_with_their_own_reason(tmp_path: Path) -> None:
    from pytest_gpucheck.backends import get_backend

    probe = get_backend("cupy").probe()
    if probe.available:
        pytest.skip("cupy is available here")
    conftest = TWO_BACKENDS.replace('backend="numba-cpu"', 'backend="cupy"')
    result = run_pytest(project(tmp_path, conftest), "--gpu-conformance", "--gpu-impls=user",
                        "-rs")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1 passed, 1 skipped" in out, out
    skip = next(line for line in out.splitlines() if line.startswith("SKIPPED"))
    assert "no user implementation" not in skip
    # The skip gives cupy's own reason: "cupy is not installed; ..." without CuPy, and the
    # driver's "no NVIDIA driver found ..." where a CUDA build of CuPy is installed but no
    # device can be used (the probe here sees the same machine as the run's).
    assert skip.endswith(f": {probe.reason}"), (skip, probe.reason)
    if "not installed" in probe.reason:
        assert "cupy" in skip.lower(), skip


BROKEN_HOST = """
import numpy as np
import pytest_gpucheck


@pytest_gpucheck.implements("vector_add", backend="numpy", name="accumulates")
def vector_add(a, b, out):
    out[...] += a + b  # out starts uninitialised (poison) for elementwise kernels


@pytest_gpucheck.implements("index_map_1d", backend="numba-cpu", name="short")
def index_map(out, launch):
    out[: max(out.shape[0] - 1, 0)] = np.arange(max(out.shape[0] - 1, 0))
"""

BROKEN_SIMULATOR = """
import pytest_gpucheck
from numba import cuda


@cuda.jit
def _index(out):
    i = cuda.grid(1)
    if i < out.shape[0] - 1:  # misses the last element
        out[i] = i


@pytest_gpucheck.implements("index_map_1d", backend="numba-cudasim", name="short")
def index_map(out, launch):
    _index[launch.grid, launch.block](out)
"""


def _reruns(output: str) -> list[str]:
    """The distinct ``rerun:`` commands (each failure prints one under its traceback,
    and the end-of-run list repeats it)."""
    commands = [line.split("rerun: ", 1)[1].strip() for line in output.splitlines()
                if "rerun: " in line]
    return list(dict.fromkeys(commands))


def _first_error(output: str) -> str:
    return next(line for line in output.splitlines() if "AssertionError: " in line)


def _run_printed(project: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Run a printed command verbatim in a shell in ``project``; ``pytest`` runs this
    interpreter, as it does in the user's activated environment."""
    shims = project / ".bin"
    shims.mkdir(exist_ok=True)
    shim = shims / "pytest"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pytest "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return user_runs.run_command(["bash", "-c", command], project, timeout=1200,
                                 first_on_path=[shims])


def test_printed_reruns_work_verbatim_from_the_users_folder(tmp_path: Path) -> None:
    """numpy and numba-cpu: each failure's ``rerun:`` line, pasted into a shell in the
    folder pytest ran in, reruns that one test and fails the same way."""
    # One of the two failures is on numba-cpu: without it (the core alone) it skips.
    pytest.importorskip("numba")
    folder = project(tmp_path, BROKEN_HOST)
    first = run_pytest(folder, "--gpu-conformance", "--gpu-impls=user",
                       "--hypothesis-profile=gpucheck-ci")
    assert first.returncode == 1, first.stdout + first.stderr
    reruns = _reruns(first.stdout)
    assert len(reruns) == 2, first.stdout
    for command in reruns:
        assert "--gpu-conformance --gpu-impls=user" in command
        again = _run_printed(folder, command)
        assert again.returncode == 1, command + "\n" + again.stdout + again.stderr
        assert "1 failed" in again.stdout, again.stdout
        assert _first_error(again.stdout) in first.stdout


def test_a_simulator_rerun_names_the_users_options(tmp_path: Path) -> None:
    """The simulator child prints the command of the user's run, not its own.  The
    implementations come from a plugin module (``-p``), which the child loads too."""
    pytest.importorskip("numba")
    (tmp_path / "my_kernels.py").write_text(BROKEN_SIMULATOR, encoding="utf-8")
    args = ("-p", "my_kernels", "--gpu-conformance", "--gpu-impls=user",
            "--gpu-backends=numba-cudasim", "--hypothesis-profile=gpucheck-ci")
    first = run_pytest(tmp_path, *args)
    assert first.returncode == 1, first.stdout + first.stderr
    (command,) = _reruns(first.stdout)
    # Caught by the boundary sweep (deterministic): no seed to pass.
    assert command.startswith("pytest -k 'test_index_map_1d[numba-cudasim:short]' "
                              "--gpu-backends=numba-cudasim "), command
    assert command.endswith("-p my_kernels --gpu-conformance --gpu-impls=user"), command
    again = _run_printed(tmp_path, command)
    assert again.returncode == 1, command + "\n" + again.stdout + again.stderr
    assert "1 failed" in again.stdout, again.stdout
    assert _first_error(again.stdout) in first.stdout


NOTHING_REGISTERED = """
import pytest_gpucheck  # the user meant to register a kernel here, and did not
"""

OWN_TEST = """
def test_something_of_their_own():
    assert True
"""


NO_USER_IMPLEMENTATIONS_LINE = (
    "ERROR: --gpu-impls=user, but no implementation is registered: register one with "
    "@pytest_gpucheck.implements(...) in your project's root conftest.py (one in a test "
    "module or a deeper folder loads too late; see docs/kernels.md), or drop --gpu-impls=user")


@pytest.mark.parametrize("extra", [("--gpu-conformance",), (), ("-n", "2"),
                                   ("-n", "2", "--gpu-conformance", "-q")],
                         ids=["with-conformance", "without", "xdist", "xdist-conformance"])
def test_gpu_impls_user_with_nothing_registered_is_a_usage_error(
        tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        extra: tuple[str, ...]) -> None:
    # The project has tests of its own, so before the first fix this run passed them
    # (exit 0) while checking no kernel at all; checked after collection, the line came
    # after pytest's header and 'collected N items', and under -n 2 each worker stopped
    # on it and the run ended in an INTERNALERROR (exit 3).
    if "-n" in extra:  # xdist's controller and workers: a real process, as a user's
        folder = project(tmp_path, NOTHING_REGISTERED)
        (folder / "test_own.py").write_text(OWN_TEST, encoding="utf-8")
        result = run_pytest(folder, *extra, "--gpu-impls=user")
        code, out = result.returncode, result.stdout + result.stderr
    else:
        pytester.makepyfile(test_own=OWN_TEST)
        code, out = run_in_process(pytester, monkeypatch, NOTHING_REGISTERED, *extra,
                                   "--gpu-impls=user")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    # One line and nothing else from the run: no header, no 'collected', no 'no tests ran'.
    assert out.split() == NO_USER_IMPLEMENTATIONS_LINE.split(), out


def test_a_registration_in_a_tests_folder_conftest_counts(tmp_path: Path) -> None:
    """The twin of the usage error: pytest loads ``tests/conftest.py`` before collection
    (a ``test*`` folder of the one it runs on), in the xdist controller too."""
    folder = project(tmp_path, NOTHING_REGISTERED)
    (folder / "tests").mkdir()
    (folder / "tests" / "conftest.py").write_text(TWO_BACKENDS.replace(
        '@pytest_gpucheck.implements("vector_add", backend="numba-cpu", name="mine")\n', ""),
        encoding="utf-8")
    (folder / "tests" / "test_own.py").write_text(OWN_TEST, encoding="utf-8")
    # One worker: the controller and a worker, what the claim needs (a second worker
    # would only start another interpreter).
    result = run_pytest(folder, "--gpu-impls=user", "-n", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout, result.stdout


def test_help_shows_with_gpu_impls_user_and_nothing_registered(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest --help configures the plugins too: a check made there refused the help.
    code, out = run_in_process(pytester, monkeypatch, NOTHING_REGISTERED, "--gpu-impls=user",
                               "--help")
    assert code == 0, out
    assert "--gpu-impls=all|bundled|user" in out, out
