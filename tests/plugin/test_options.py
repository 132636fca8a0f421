"""Option parsing and the one-line usage errors (exit code 4) of the core options."""

from __future__ import annotations

import pytest

from pytest_gpucheck.backends import BACKENDS
from pytest_gpucheck.options import parse_backend_spec

VALID = (
    "all, cpu, gpu or a comma-separated list of "
    "numpy, numba-cpu, numba-cudasim, jax-cpu, torch-cpu, array-api-strict, numba-cuda, cupy, "
    "jax-gpu, cuda-python, torch-cuda"
)


def test_groups_and_names_expand_in_report_order() -> None:
    spec = parse_backend_spec("torch-cpu,cpu")
    assert spec.names == ("torch-cpu", "numpy", "numba-cpu", "numba-cudasim", "jax-cpu",
                          "array-api-strict")
    assert spec.explicit == {"torch-cpu"}
    assert set(parse_backend_spec("all").names) == set(BACKENDS)
    assert parse_backend_spec("gpu,numpy").explicit == {"numpy"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "bogus",
            f"ERROR: --gpu-backends: unknown backend or group 'bogus'; valid values: {VALID}",
        ),
        ("", f"ERROR: --gpu-backends is empty; use {VALID}"),
        (
            "numpy,",
            "ERROR: --gpu-backends='numpy,' has a stray comma; write NAME[,NAME...], "
            "e.g. numpy,torch-cpu",
        ),
        (
            "numpy,,torch-cpu",
            "ERROR: --gpu-backends='numpy,,torch-cpu' has a stray comma; write NAME[,NAME...], "
            "e.g. numpy,torch-cpu",
        ),
        (
            "numpy, torch-cpu",
            "ERROR: --gpu-backends='numpy, torch-cpu' contains spaces; write the list without "
            "them, e.g. numpy,torch-cpu",
        ),
    ],
)
def test_bad_backend_values_are_one_line_usage_errors(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    result = _usage_error(pytester, f"--gpu-backends={value}", message)
    assert "Traceback" not in result.stderr.str()


def _usage_error(pytester: pytest.Pytester, option: str, message: str) -> pytest.RunResult:
    """A run of one plain test with ``option``: a usage error whose first line is
    ``message``."""
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == message
    return result


def test_explicit_unavailable_backend_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--gpu-backends=cupy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([r"^ERROR: --gpu-backends: cupy is not available: .+$"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1


def test_ini_key_selects_backends_and_is_validated(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("torch")
    pytester.makeini("[pytest]\ngpu_backends = numpy,torch-cpu\n")
    pytester.makepyfile("def test_x(gpu_backend): pass")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_x?numpy? PASSED*", "*test_x?torch-cpu? PASSED*"])
    pytester.makeini("[pytest]\ngpu_backends = numpy,nope\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith("ERROR: gpu_backends: unknown backend or group 'nope'")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x1", "ERROR: --gpu-device='x1' is not valid; use auto or a device index >= 0"),
        ("-1", "ERROR: --gpu-device='-1' is not valid; use auto or a device index >= 0"),
        ("", "ERROR: --gpu-device='' is not valid; use auto or a device index >= 0"),
    ],
)
def test_malformed_device_is_a_usage_error(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    _usage_error(pytester, f"--gpu-device={value}", message)


def test_device_index_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    from pytest_gpucheck.backends.devices import cuda_driver

    pytester.makepyfile("def test_x(): pass")
    count = len(cuda_driver().devices)
    result = pytester.runpytest(f"--gpu-device={count}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    if count == 0:
        expected = f"ERROR: --gpu-device=0: {cuda_driver().reason}; use --gpu-device=auto"
    else:
        expected = (
            f"ERROR: --gpu-device={count}: only {count} CUDA device(s) visible; "
            f"use auto or an index in 0..{count - 1}"
        )
    assert result.stderr.lines[0] == expected


def test_gpu_require_fails_the_run_without_a_gpu(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("torch")
    from pytest_gpucheck.backends.devices import cuda_driver

    if cuda_driver().available:
        pytest.skip("this machine has a GPU; the failure path needs none")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--gpu-require=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == f"ERROR: --gpu-require=gpu: {cuda_driver().reason}"
    # A required backend must be selected too (docs/options.md): alone it is a usage error.
    result = pytester.runpytest("--gpu-backends=torch-cpu", "--gpu-require=torch-cpu")
    assert result.ret == pytest.ExitCode.OK


def test_report_path_needs_a_known_extension(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--gpu-report=out.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        "ERROR: --gpu-report='out.txt': the file name must end in .json or .md (for the GitHub "
        "job summary give no option: $GITHUB_STEP_SUMMARY is appended to automatically; "
        "elsewhere use --gpu-summary=PATH)"
    )
