"""Assertion helpers: one message shape, hidden frames, and a reproducer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from user_runs import run_pytest

from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.checking.assertions import (
    CheckContext,
    assert_dtype,
    assert_matches_reference,
    assert_unchanged,
)
from pytest_gpucheck.checking.kernel_launch import LaunchConfig

CONTEXT = CheckContext(kernel="vector_add", backend="cupy", implementation="raw",
                       case="n=7, dtype=float64", launch=LaunchConfig((1,), (32,)),
                       arrays={"a": "shape=(7,) strides=(16,) dtype=float64 (strided)"},
                       seed=1234, profile="gpucheck-ci",
                       nodeid="conformance/test_elementwise.py::test_vector_add[cupy:raw]",
                       rerun_options=("--gpu-conformance",))


def test_dtype_message_shape() -> None:
    with pytest.raises(AssertionError) as info:
        assert_dtype(np.float32, np.float64, CONTEXT)
    first = str(info.value).splitlines()[0]
    assert first == ("out.dtype=float32, but should be float64 "
                     "[vector_add(n=7, dtype=float64) on cupy:raw]")


def test_reproducer_names_everything_needed_to_rerun() -> None:
    text = CONTEXT.reproducer()
    assert "launch: grid=(1,) block=(32,)" in text
    assert "a: shape=(7,) strides=(16,) dtype=float64 (strided)" in text
    assert "hypothesis seed: 1234 (profile gpucheck-ci)" in text
    assert ("rerun: pytest 'conformance/test_elementwise.py::test_vector_add[cupy:raw]' "
            "--gpu-backends=cupy --hypothesis-seed=1234 --hypothesis-profile=gpucheck-ci "
            "--gpu-conformance") in text


def test_value_mismatch_lists_errors_and_first_indices() -> None:
    expected = np.arange(7, dtype=np.float64)
    actual = expected.copy()
    actual[3] += 1
    actual[5] = np.nan
    with pytest.raises(AssertionError) as info:
        assert_matches_reference(actual, expected, tol.exact("copy"), CONTEXT)
    message = str(info.value)
    assert message.startswith("out[3]=4.0, but should be 3.0 [vector_add(")
    assert "2 of 7 elements differ" in message
    assert "out[5]=nan (expected 5.0)" in message
    assert "reproducer:" in message


def test_matching_result_passes() -> None:
    expected = np.ones(3, dtype=np.float32)
    assert_matches_reference(expected.copy(), expected, tol.within_ulps(np.float32, 1, "t"))


@pytest.mark.parametrize("helper", [assert_dtype, assert_matches_reference, assert_unchanged])
def test_helpers_hide_their_frames(helper: object) -> None:
    assert "__tracebackhide__" in helper.__code__.co_varnames  # type: ignore[attr-defined]


def test_unchanged_reports_the_changed_elements() -> None:
    before = np.zeros(4)
    after = before.copy()
    after[2] = 1
    with pytest.raises(AssertionError, match=r"(?s)input b was modified .*\[2\] 0.0 -> 1.0"):
        assert_unchanged(before, after, "ctx", name="b")


def test_plain_string_context() -> None:
    with pytest.raises(AssertionError, match=r"out.shape=\(2,\), but should be \(3,\) \[mine\]"):
        assert_matches_reference(np.zeros(2), np.zeros(3), tol.exact("t"), "mine")


def test_small_inputs_are_shown_whole_and_large_ones_summarised() -> None:
    from pytest_gpucheck.checking.assertions import show_values

    assert show_values(np.array([1.5, -2.0], np.float32)) == "[ 1.5, -2. ]"
    large = show_values(np.arange(127, dtype=np.float64))
    assert large == "[  0.,   1.,   2., ..., 124., 125., 126.] (127 values)"


def test_a_failing_draw_prints_its_arrays_summarised() -> None:
    """Hypothesis prints the failing draw with its own pretty printer: one line, not the
    35 lines of a whole 127-element array."""
    from hypothesis.vendor.pretty import pretty

    from pytest_gpucheck.conformance.specs import Case

    case = Case({"x": np.arange(127, dtype=np.float32), "alpha": 2.0}, "n=127", (127,))
    text = pretty(case)
    assert "\n" not in text
    assert "(127 values)" in text
    assert "alpha=2.0" in text
    assert "n=127" in text


@pytest.mark.slow
def test_a_sweep_failure_shows_the_values_of_small_inputs(tmp_path: Path) -> None:
    """At n=1 the reproducer shows a[0] and b[0], not only shapes and strides."""
    (tmp_path / "conftest.py").write_text(
        "import pytest_gpucheck\n\n\n"
        "@pytest_gpucheck.implements('vector_add', backend='numpy', name='off_by_one')\n"
        "def vector_add(a, b, out):\n"
        "    out[...] = a + b + 1\n")
    result = run_pytest(tmp_path, "--gpu-conformance", "--gpu-impls=user",
                        "--gpu-backends=numpy", "-k", "test_vector_add",
                        "--hypothesis-profile=gpucheck-ci",
                        timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    match = re.search(r"^E\s+a: shape=\(1,\).* values=\[(.+)\]$", result.stdout, re.M)
    assert match is not None, result.stdout[-3000:]
