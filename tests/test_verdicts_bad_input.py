"""Bad input stops the run with exit code 4 and one line that names the fix.

Each value is checked as early as it can be known: options before collection,
markers at the end of collection (before any test runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpucheck.backends import BACKENDS

A_TEST = "def test_something():\n    pass\n"
WEEK = "it must be a number of seconds > 0 and <= 604800 (a week)"


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """Run pytest; check it stopped with exit 4 and one ERROR line; return that line."""
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines + result.errlines
    errors = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.errlines
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)
    return errors[0]


def test_report_path_that_is_a_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(A_TEST)
    folder = pytester.mkdir("reports.md")
    assert usage_error(pytester, f"--gpu-report={folder}") == (
        f"ERROR: --gpu-report='{folder}' is a directory; give a file path in it, e.g. "
        f"--gpu-report={folder / 'gpucheck-report.md'}")


def test_report_path_below_a_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(A_TEST)
    blocker = pytester.path / "results"
    blocker.write_text("a file")
    path = blocker / "report.md"
    assert usage_error(pytester, f"--gpu-report={path}") == (
        f"ERROR: --gpu-report='{path}': {blocker} is a file, not a folder; choose another path")


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs /sys (Linux)")
def test_report_path_that_cannot_be_written(pytester: pytest.Pytester) -> None:
    # /sys refuses new files even to root; a read-only mount answers the same
    # way with "Read-only file system".
    pytester.makepyfile(A_TEST)
    line = usage_error(pytester, "--gpu-report=/sys/gpucheck-report.md")
    assert line.startswith("ERROR: --gpu-report='/sys/gpucheck-report.md': cannot write in /sys (")
    assert line.endswith("); choose a writable folder")


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e12"])
def test_mpi_timeout_option_out_of_range(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(A_TEST)
    shown = f"{float(value):g}"
    assert usage_error(pytester, f"--gpu-mpi-timeout={value}") == (
        f"ERROR: --gpu-mpi-timeout={shown}: {WEEK}, e.g. --gpu-mpi-timeout=300")


@pytest.mark.parametrize("value", ["float('inf')", "float('nan')", "-5", "10**9", "'60'"])
def test_mpi_marker_timeout_out_of_range(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_mpi=f"""
        import pytest

        @pytest.mark.mpi(ranks=2, timeout={value})
        def test_x(mpi_comm):
            pass
        """)
    shown = repr(eval(value))  # the test's own literals
    problem = "it must be a number of seconds" if value == "'60'" else WEEK
    assert usage_error(pytester, "--gpu-mpi-launcher=sh") == (
        f"ERROR: test_mpi.py::test_x: @pytest.mark.mpi got timeout={shown}: {problem}; use "
        "@pytest.mark.mpi(ranks=2) or @pytest.mark.mpi(ranks=[2, 4], timeout=60)")


def test_unknown_backend_in_a_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked="""
        import pytest

        @pytest.mark.gpu_backends("nonexistent")
        def test_x(gpu_backend):
            pass

        def test_y():
            pass
        """)
    # Even with -k selecting another test: the marker is wrong, not the selection.
    assert usage_error(pytester, "-k", "test_y") == (
        "ERROR: test_marked.py::test_x: @pytest.mark.gpu_backends: unknown backend or group "
        f"'nonexistent'; valid values: all, cpu, gpu or a comma-separated list of "
        f"{', '.join(BACKENDS)}")


def test_launcher_that_does_not_exist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(A_TEST)
    assert usage_error(pytester, "--gpu-mpi-launcher=no-such-mpiexec -np {n}") == (
        "ERROR: --gpu-mpi-launcher='no-such-mpiexec -np {n}': 'no-such-mpiexec' is not an "
        "executable on PATH or next to this Python; install it or fix the command")
