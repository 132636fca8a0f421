"""Bad input stops the run with exit code 4 and one line that names the fix.

Each value is checked as early as it can be known: options before collection,
markers at the end of collection (before any test runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from user_runs import run_pytest

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


#: A bad value for every option of the gpucheck section of ``pytest --help`` that takes
#: one, the start of the one line it must give, and for the options whose values argparse
#: used to check, a good value that runs the user's test (None: every value is accepted).
BAD_VALUES: dict[str, tuple[str, str, str | None] | None] = {
    "--gpu-backends": ("bogus", "--gpu-backends: unknown backend or group 'bogus'", None),
    "--gpu-require": ("bogus", "--gpu-require: unknown backend or group 'bogus'", None),
    "--gpu-device": ("first", "--gpu-device='first' is not valid", None),
    "--gpu-report": ("report.txt", "--gpu-report='report.txt': the file name must end in",
                     None),
    "--gpu-impls": ("mine", "--gpu-impls='mine' is not valid; use all, bundled or user",
                    "bundled"),
    "--gpu-annotations": ("yes", "--gpu-annotations='yes' is not valid; use auto, on or off",
                          "off"),
    "--gpu-isolate": ("sometimes", "--gpu-isolate='sometimes' is not valid; use auto, none, "
                                   "backend or test", "none"),
    "--gpu-sanitize": ("valgrind", "--gpu-sanitize='valgrind': unknown tool 'valgrind'", None),
    "--gpu-host-devices": ("-1", "--gpu-host-devices='-1': the device count must be a whole "
                                 "number >= 1, e.g. --gpu-host-devices=4, or 0", "2"),
    "--gpu-mpi-launcher": ("no-such-mpiexec", "--gpu-mpi-launcher='no-such-mpiexec': ", None),
    "--gpu-mpi-timeout": ("soon", "--gpu-mpi-timeout=soon: it must be a number of seconds",
                          "60"),
    "--gpu-mpi-max-ranks": ("two", "--gpu-mpi-max-ranks=two: use a rank count >= 1", "2"),
    "--gpu-bench-baseline": ("conftest.py", "--gpu-bench-baseline=conftest.py is a file",
                             None),
    "--gpu-bench-against": ("no-such-folder", "--gpu-bench-against=no-such-folder: no such "
                                              "folder", None),
    "--gpu-bench-plot": ("plot.png", "--gpu-bench-plot=plot.png: the plot is HTML", None),
    "--gpu-bench-family-level": ("2", "--gpu-bench-family-level='2': the chance that "
                                      "identical code fails the run must be a number in (0, 1)",
                                 "0.05"),
    "--gpu-bench-budget": ("soon", "--gpu-bench-budget='soon': the seconds a benchmark may "
                                   "take to decide must be a number above 0", "30"),
    "--gpu-bench-pin": ("half", "--gpu-bench-pin='half': use split or off", "off"),
    "--gpu-bench-inconclusive": ("maybe", "--gpu-bench-inconclusive='maybe': use pass or fail",
                                 "fail"),
    # auto, off or a path (a '/' or .md); a path that cannot be written is reported where
    # the summary is appended, at the end, and leaves the verdict as it is (docs/ci.md).
    "--gpu-summary": ("maybe", "--gpu-summary='maybe' is not valid; use auto, off or a file "
                               "path", "summary.md"),
}


def _user_run(folder: Path, *args: str) -> tuple[int, str]:
    result = run_pytest(folder, *args, timeout=900)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def help_options(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The options of the gpucheck section of ``pytest --help`` that take a value."""
    code, out = _user_run(tmp_path_factory.mktemp("help"), "--help")
    assert code == 0, out
    section = out.split("\nGPU kernel checks (pytest-gpucheck):\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0].split("=")[0] for line in section.splitlines()
            if line.startswith("  --") and "=" in line.split()[0]]


@pytest.mark.slow
def test_help_lists_the_selection_first(help_options: list[str]) -> None:
    """``pytest --help``: the plugin's section opens with --gpu-backends (the benchmark and
    MPI options came first when the feature plugins registered before the core's options)."""
    assert help_options[:2] == ["--gpu-backends", "--gpu-require"], help_options


@pytest.mark.slow
def test_every_option_with_a_value_has_a_bad_value_below(help_options: list[str]) -> None:
    assert len(help_options) >= 15, help_options
    assert sorted(help_options) == sorted(BAD_VALUES), "add the new option to BAD_VALUES"


@pytest.mark.slow
@pytest.mark.parametrize("option", [name for name, bad in BAD_VALUES.items() if bad])
def test_a_bad_option_value_is_one_line_and_exit_4(tmp_path: Path, option: str) -> None:
    """The user's command in a project of their own: the one ERROR line, nothing else.
    argparse's own errors (``choices=``, ``type=int``) took three lines: its usage, its
    message, the ini file and rootdir."""
    bad = BAD_VALUES[option]
    assert bad is not None
    value, start, good = bad
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "test_own.py").write_text(A_TEST)
    code, out = _user_run(tmp_path, f"{option}={value}")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    assert out.strip().splitlines() == [out.strip()], out
    assert out.startswith(f"ERROR: {start}"), out
    if good is not None:  # the twin: the check lets a valid value through
        code, out = _user_run(tmp_path, f"{option}={good}")
        assert code == pytest.ExitCode.OK, out
        assert "1 passed" in out, out
