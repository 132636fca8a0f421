"""What a second new user met, each step redone as they did it: a project of their own,
the command they typed, and the line they should have read.

Bad option values and registration errors are one ``ERROR:`` line and exit 4; a run
of benchmarks alone prints no conformance matrix.
"""

from __future__ import annotations

import pytest

A_TEST = "def test_something():\n    pass\n"


def one_usage_line(result: pytest.RunResult) -> str:
    """The run stopped with exit 4 and one ERROR line, no traceback; that line."""
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    errors = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert len(errors) == 1, text
    assert "Traceback" not in text, text
    assert "ImportError" not in text, text
    return errors[0]


@pytest.mark.parametrize("value", ["maybe", "on", "yes"])
def test_a_summary_keyword_that_is_not_one_stops_the_run(pytester: pytest.Pytester,
                                                         value: str) -> None:
    """``--gpu-summary=maybe`` was taken as a file name and written in the project."""
    pytester.makepyfile(A_TEST)
    line = one_usage_line(pytester.runpytest("-p", "no:cacheprovider", f"--gpu-summary={value}"))
    assert line == (f"ERROR: --gpu-summary='{value}' is not valid; use auto, off or a file path "
                    "(one with a '/' or ending in .md), e.g. --gpu-summary=gpucheck-summary.md")
    assert not (pytester.path / value).exists()


@pytest.mark.parametrize("value", ["summary.md", "out/summary.txt"])
def test_a_summary_path_is_written(pytester: pytest.Pytester, value: str) -> None:
    """The twin: what looks like a path is one, and the summary is appended to it."""
    pytester.makepyfile("def test_cell(gpu_backend):\n    pass\n")
    (pytester.path / "out").mkdir()
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy",
                                f"--gpu-summary={value}")
    assert result.ret == pytest.ExitCode.OK, result.outlines + result.errlines
    assert (pytester.path / value).read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("value", ["-1", "2.5", "four"])
def test_a_host_device_count_below_one_says_what_is_accepted(pytester: pytest.Pytester,
                                                             value: str) -> None:
    """``--gpu-host-devices=-1`` said "not a whole number"."""
    pytester.makepyfile(A_TEST)
    line = one_usage_line(pytester.runpytest("-p", "no:cacheprovider",
                                             f"--gpu-host-devices={value}"))
    assert line == (f"ERROR: --gpu-host-devices='{value}': the device count must be a whole "
                    "number >= 1, e.g. --gpu-host-devices=4, or 0 to leave XLA_FLAGS alone")


#: Registrations a user's conftest.py gets wrong, and the one line each must give.
BAD_REGISTRATIONS = {
    "unknown kernel": (
        '@pytest_gpucheck.implements("nonexistent_kernel", backend="numpy", name="mine")\n'
        "def f(a, b, out):\n    out[...] = a + b\n",
        "ERROR: conftest.py:4: unknown kernel 'nonexistent_kernel'; valid kernels: "),
    "unknown backend": (
        '@pytest_gpucheck.implements("vector_add", backend="cuda", name="mine")\n'
        "def f(a, b, out):\n    out[...] = a + b\n",
        "ERROR: conftest.py:4: unknown backend 'cuda'; valid backends: numpy, "),
    "off the contract": (
        '@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")\n'
        "def f(a, out):\n    out[...] = a\n",
        "ERROR: conftest.py:4: vector_add on numpy: f(a, out) does not match the contract "),
    "not applicable to an unknown kernel": (
        'pytest_gpucheck.not_applicable("vector_sub", "numpy", "no reason")\n',
        "ERROR: conftest.py:4: unknown kernel 'vector_sub'; valid kernels: "),
}


@pytest.mark.parametrize("case", list(BAD_REGISTRATIONS))
def test_a_registration_error_in_a_conftest_is_one_line(pytester: pytest.Pytester,
                                                        case: str) -> None:
    """kernels.md: a registration that cannot be used stops the run with one line and
    exit 4. It was 5 to 7 lines of "ImportError while loading conftest" with a frame
    inside the registry."""
    code, start = BAD_REGISTRATIONS[case]
    pytester.makeconftest(f"import pytest_gpucheck\n\n\n{code}")
    pytester.makepyfile(A_TEST)
    line = one_usage_line(pytester.runpytest("-p", "no:cacheprovider"))
    assert line.startswith(start), line


def test_an_error_of_the_conftest_itself_keeps_pytest_s_report(pytester: pytest.Pytester) -> None:
    """The twin: a conftest that fails for another reason keeps pytest's traceback (its
    line alone would hide where the error is)."""
    pytester.makeconftest("import pytest_gpucheck\n\n1 / 0\n")
    pytester.makepyfile(A_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ZeroDivisionError" in "\n".join(result.errlines)


BENCHMARK_ONLY = """
import numpy as np


def test_scale(gpu_benchmark, gpu_backend):
    x = gpu_backend.to_device(np.arange(256, dtype=np.float32))
    gpu_benchmark(lambda: x * 2)
"""


def test_a_benchmark_only_run_prints_no_conformance_matrix(pytester: pytest.Pytester) -> None:
    """A benchmark is a measurement, no conformance check: its run printed a
    "gpucheck conformance matrix" with a row named after the test file."""
    pytester.makepyfile(test_bench=BENCHMARK_ONLY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy",
                                "--benchmark-disable-gc", "--benchmark-min-rounds=1")
    result.assert_outcomes(passed=1)
    out = "\n".join(result.outlines)
    assert "gpucheck benchmarks" in out, out
    assert "conformance matrix" not in out, out
    assert not any(line.startswith("bench ") for line in result.outlines), out


def test_a_conformance_test_beside_a_benchmark_keeps_its_cell(pytester: pytest.Pytester) -> None:
    """The twin: a ``gpu_backend`` test without the benchmark still counts in the matrix."""
    pytester.makepyfile(test_bench=BENCHMARK_ONLY + """

def test_plain(gpu_backend):
    assert gpu_backend.name == "numpy"
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy",
                                "--benchmark-min-rounds=1")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*gpucheck conformance matrix*", "bench*pass 1*"])


BACKEND_TEST = "def test_a(gpu_backend):\n    pass\n"


def test_a_required_backend_left_out_of_the_selection_is_a_usage_error(
        pytester: pytest.Pytester) -> None:
    """``--gpu-require=jax-cpu`` with the default selection passed without running anything
    on jax-cpu. Requiring is not selecting: the line names the option that selects it."""
    pytest.importorskip("jax")
    pytester.makepyfile(BACKEND_TEST)
    line = one_usage_line(pytester.runpytest("-p", "no:cacheprovider", "--gpu-require=jax-cpu"))
    assert line == ("ERROR: --gpu-require=jax-cpu: jax-cpu is not selected (--gpu-backends=numpy, "
                    "the default), so the run would not check it; select it: "
                    "--gpu-backends=numpy,jax-cpu")
    # The twin: selected, it is checked.
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy,jax-cpu",
                                "--gpu-require=jax-cpu", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_a?jax-cpu? PASSED*"])


def test_require_gpu_with_no_gpu_backend_selected(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU machine (faked: a driver and an available GPU backend), ``--gpu-require=gpu``
    with a selection of host backends would check no GPU: a usage error; with ``gpu``
    selected it passes."""
    from types import SimpleNamespace

    from pytest_gpucheck import selection as selection_module
    from pytest_gpucheck.backends.base import Probe
    from pytest_gpucheck.options import parse_backend_spec

    monkeypatch.setattr(selection_module, "cuda_driver", lambda: SimpleNamespace(available=True))
    monkeypatch.setattr(selection_module.Selection, "backend", lambda self, name: SimpleNamespace(
        probe=lambda: Probe(available=name in ("numpy", "cupy"), reason="faked")))

    def check(spec: str) -> None:
        chosen = selection_module.Selection(parse_backend_spec(spec), "auto",
                                            explicit_option=True)
        selection_module._check_required(chosen, "gpu")

    with pytest.raises(pytest.UsageError, match=(
            r"^--gpu-require=gpu: no available GPU backend is selected \(--gpu-backends=cpu\), "
            r"so the run would check no GPU; select them: --gpu-backends=gpu \(or all\)$")):
        check("cpu")
    check("gpu")
    check("numpy,cupy")


def test_a_run_where_no_selected_backend_could_run_says_so_last(
        pytester: pytest.Pytester) -> None:
    """``--gpu-backends=gpu`` on a machine without a GPU ended "5 skipped", exit 0, with no
    hint: a CI job written that way is green on a runner that lost its GPU."""
    from pytest_gpucheck.backends.devices import cuda_driver

    if cuda_driver().available:
        pytest.skip("this machine has a GPU")
    pytester.makepyfile(BACKEND_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=gpu")
    assert result.ret == pytest.ExitCode.OK
    hint = ("gpucheck: none of --gpu-backends=gpu could run here; --gpu-require=gpu makes that "
            "an error")
    assert result.outlines[-2] == hint, result.outlines
    # The twin: when something ran, no such line.
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy,gpu")
    assert not any("could run here" in line for line in result.outlines), result.outlines


SECTIONS_CONFTEST = '''
from pytest_gpucheck.hookspecs import ReportSection


def pytest_gpucheck_report_sections(config):
    return [
        ReportSection("pairs", {}, "## My pair matrix\\n\\n...\\n",
                      ["my pair matrix", "  a x b: zero-copy", "  known defect: x"]),
        ReportSection("note", {}, "one note\\n", ["gpucheck: one note"]),
    ]
'''


def test_the_run_ends_with_the_matrix_then_one_line_per_section(
        pytester: pytest.Pytester) -> None:
    """The main job's matrix started 223 lines before pytest's last line: the interop pair
    matrix, its known defects and "interop not available" came after it, and the GPU
    backends' columns (all skip on a CPU machine) took 28 lines."""
    from pytest_gpucheck.backends.devices import cuda_driver

    if cuda_driver().available:
        pytest.skip("the GPU backends run here: no columns to fold")
    pytester.makeconftest(SECTIONS_CONFTEST)
    pytester.makepyfile(BACKEND_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy,gpu",
                                "--gpu-report=report.md")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    lines = result.outlines
    matrix = next(i for i, line in enumerate(lines) if "gpucheck conformance matrix" in line)
    # The longer section before the matrix, the one-line one after it.
    assert lines.index("  known defect: x") < matrix
    assert lines[matrix + 1].split() == ["family", "numpy"]  # the GPU columns folded...
    assert lines[matrix + 3].startswith(  # ...into one line with the reasons
        "  skip in every family (columns left out): numba-cuda, "), lines[matrix + 3]
    assert lines[-5:-1] == [
        "gpucheck: 1 pass, 5 skip (items in the matrix's cells; pytest's line below counts "
        "every test)",
        "gpucheck: My pair matrix: above the matrix and in report.md",
        "gpucheck: one note",
        "gpucheck: report written to report.md",
    ], lines
