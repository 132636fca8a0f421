"""What a real client's maintainer read when the suites found bugs in a third-party package
(numbagg 0.9.6, Numba aggregation kernels; issue 39), redone in a temporary project run as
a user runs it: a ``conftest.py`` that registers implementations and
``python -m pytest --gpu-conformance --gpu-impls=user --gpu-backends=numpy,numba-cpu`` in a
subprocess.

* An implementation that raises shows the user's traceback (their frames, filtered as pytest
  filters a test's), not only its message.
* An integer result is compared and its error reported exactly (an int64 off by one above
  2**53 read ``max abs error 0``).
* Malformed markers are one line each, exit 4; an option mistyped gets the option meant.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from user_runs import run_pytest

from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.checking.assertions import values_problem

USER_RUN = ("--gpu-conformance", "--gpu-impls=user", "--gpu-backends=numpy,numba-cpu",
            "--hypothesis-profile=ci", "-n0")


def project(tmp_path: Path, conftest: str, **files: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "conftest.py").write_text(textwrap.dedent(conftest), encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


# -- 3. the user's traceback -------------------------------------------------------------

RAISING = '''\
import numpy as np
import pytest_gpucheck


def _accumulate(x, out):
    raise ValueError("accumulator not ready")


@pytest_gpucheck.implements("sum", backend="numpy", name="mine")
@pytest_gpucheck.implements("sum", backend="numba-cpu", name="mine")
def my_sum(x, out):
    _accumulate(x, out)
'''


def test_an_implementation_that_raises_shows_the_users_frames(tmp_path: Path) -> None:
    """numbagg's maintainer saw ``raised ValueError: ...`` and no frame of their code, even
    with ``--tb=long -vv``: the failure now carries the exception as its cause, and pytest
    prints the user's frames (source and line) first, with no plugin or hypothesis frame."""
    folder = project(tmp_path, RAISING)
    result = run_pytest(folder, *USER_RUN, "--tb=long", "-k", "test_sum", timeout=300)
    text = output(result)
    assert result.returncode == 1, text[-3000:]
    assert "2 failed" in text, text[-2000:]
    # The user's frames, with their source: the registered function and the helper it calls.
    assert re.search(r"def my_sum\(x, out\):\n>\s+_accumulate\(x, out\)", text), text[-4000:]
    assert re.search(r">\s+raise ValueError\(\"accumulator not ready\"\)\nE\s+ValueError: "
                     r"accumulator not ready\n\nconftest.py:6: ValueError", text), text[-4000:]
    assert text.count("The above exception was the direct cause of the following exception") == 2
    # Filtered as pytest filters its own: the frame of the plugin that called the
    # implementation, hypothesis' and pytest's internals are not shown.
    cause = text.split("The above exception")[0]
    for internal in ("harness.py:", "_invoke", "hypothesis/", "_pytest/", "pluggy/"):
        assert internal not in cause, internal
    # The message and the reproducer are still the failure's own.
    assert "conftest.my_sum raised ValueError: accumulator not ready, but should return " \
           "normally" in text


def test_tb_short_and_line_show_less_of_the_users_frames(tmp_path: Path) -> None:
    """The frames follow ``--tb``: short shows each user frame as one line and its source,
    line shows no source at all."""
    folder = project(tmp_path, RAISING)
    short = output(run_pytest(folder, *USER_RUN, "--tb=short", "-k", "test_sum[numpy",
                              timeout=300))
    assert re.search(r"conftest.py:12: in my_sum\n\s+_accumulate\(x, out\)\n"
                     r"conftest.py:6: in _accumulate\n", short), short[-3000:]
    assert "def my_sum" not in short
    line = output(run_pytest(folder, *USER_RUN, "--tb=line", "-k", "test_sum[numpy",
                             timeout=300))
    assert "E   ValueError: accumulator not ready" in line, line[-3000:]
    assert "_accumulate(x, out)" not in line


# -- 4. integers exactly -----------------------------------------------------------------


def test_an_int64_off_by_one_above_two_to_the_53_has_error_1() -> None:
    """``out[0]=9007199254740992, but should be 9007199254740993`` read ``max abs error 0``:
    the error went through float64, which has no 9007199254740993."""
    got = np.array([2**53], dtype=np.int64)
    want = np.array([2**53 + 1], dtype=np.int64)
    problem = values_problem(got, want, tol.exact("max involves no rounding"), "max")
    assert problem is not None
    assert "out[0]=9007199254740992, but should be 9007199254740993 [max]" in problem
    assert "max abs error 1;" in problem


def test_integer_errors_do_not_overflow() -> None:
    """The error of int64 extremes needs 65 bits: exact as a Python int, not wrapped."""
    info = np.iinfo(np.int64)
    error = tol.abs_error(np.array([info.min, 5], np.int64), np.array([info.max, 5], np.int64))
    assert [int(e) for e in error] == [2**64 - 1, 0]
    got = np.array([info.min], np.int64)  # numbagg's nanmax([INT64_MAX]) returned INT64_MIN
    problem = values_problem(got, np.array([info.max], np.int64), tol.exact("exact"), "nanmax")
    assert problem is not None
    assert f"max abs error {2**64 - 1};" in problem
    unsigned = tol.abs_error(np.array([0], np.uint64), np.array([2**64 - 1], np.uint64))
    assert int(unsigned[0]) == 2**64 - 1


def test_integer_comparisons_are_exact_against_floats_too() -> None:
    """An int64 beyond 2**53 against a float64 that rounds to it is not equal (an exact rule
    compared both through float64)."""
    rule = tol.exact("exact")
    mask = rule.mismatches(np.array([2.0**53]), np.array([2**53 + 1], np.int64))
    assert mask.tolist() == [True]
    assert rule.mismatches(np.array([2**53 + 1], np.int64),
                           np.array([2**53 + 1], np.int64)).tolist() == [False]


OFFSET = '''\
import numpy as np
import pytest_gpucheck
from pytest_gpucheck.reference_kernels.catalog import Entry, add


def shift_ns(t):
    """Timestamps moved by 2**53 ns: the result is beyond what float64 holds exactly."""
    return t + np.int64(2**53)


add(Entry("shift_ns", "timestamps", shift_ns, ("t",), ("int64",), "correctly_rounded"))


@pytest_gpucheck.implements("shift_ns", backend="numpy", name="through_float")
@pytest_gpucheck.implements("shift_ns", backend="numba-cpu", name="through_float")
def shift_through_float(t, out):
    out[...] = (t.astype(np.float64) + 2.0**53).astype(np.int64)
'''


def test_a_user_run_reports_the_exact_integer_error(tmp_path: Path) -> None:
    """A user's kernel whose int64 result goes through float64 (numbagg's nanmax did) is off
    by one for odd inputs: the failure says so, with the exact error."""
    folder = project(tmp_path, OFFSET)
    result = run_pytest(folder, *USER_RUN, timeout=300)
    text = output(result)
    assert result.returncode == 1, text[-3000:]
    assert "2 failed" in text, text[-2000:]
    heads = re.findall(r"out\[(\d+)\]=(-?\d+), but should be (-?\d+)", text)
    errors = re.findall(r"elements differ; max abs error (\S+?);", text)
    assert heads, text[-3000:]
    assert errors, text[-3000:]
    assert "max abs error 0;" not in text
    for _, got, want in heads:
        assert int(got) != int(want)
    assert {int(e) for e in errors} == {1}, errors


# -- 7. markers and options ---------------------------------------------------------------

MARKED = '''\
import pytest


@pytest.mark.gpu_backends(["cpu"])
def test_scaled(gpu_backend):
    pass
'''


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    text = output(result)
    assert result.returncode == 4, text[-3000:]
    errors = [line for line in text.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert "INTERNALERROR" not in text, text[-3000:]
    return errors[0]


def test_a_list_in_gpu_backends_is_one_line_naming_the_call(tmp_path: Path) -> None:
    """``gpu_backends(["cpu"])`` was ``TypeError: sequence item 0: expected str instance, list
    found`` from selection.py, exit 2."""
    folder = project(tmp_path, "", **{"test_marked.py": MARKED})
    line = one_error_line(run_pytest(folder, "--gpu-backends=numpy,numba-cpu", "-n0",
                                     timeout=120))
    assert line == ("ERROR: test_marked.py::test_scaled: @pytest.mark.gpu_backends(['cpu']) "
                    "takes the names as separate arguments, not a list: write "
                    "@pytest.mark.gpu_backends('cpu')")


@pytest.mark.parametrize("marker", ["gpu_xfail", "gpu_skip"])
def test_a_malformed_outcome_marker_is_one_line_not_one_per_backend(tmp_path: Path,
                                                                    marker: str) -> None:
    """A ``gpu_xfail`` with an unknown keyword printed its line once per parametrized item
    (six identical lines on six backends)."""
    bad = MARKED.replace('gpu_backends(["cpu"])', f'{marker}("numpy", raison="typo")')
    folder = project(tmp_path, "", **{"test_marked.py": bad})
    line = one_error_line(run_pytest(folder, "--gpu-backends=numpy,numba-cpu,array-api-strict",
                                     "-n0", timeout=120))
    assert line.startswith(f"ERROR: test_marked.py::test_scaled: @pytest.mark.{marker}: "
                           "unknown keyword 'raison'"), line


def test_a_list_in_gpu_xfail_is_the_same_line(tmp_path: Path) -> None:
    bad = MARKED.replace('gpu_backends(["cpu"])', 'gpu_xfail(("numpy", "cpu"), reason="r")')
    folder = project(tmp_path, "", **{"test_marked.py": bad})
    line = one_error_line(run_pytest(folder, "--gpu-backends=numpy", "-n0", timeout=120))
    assert line.endswith("@pytest.mark.gpu_xfail(('numpy', 'cpu')) takes the names as "
                         "separate arguments, not a tuple: write "
                         "@pytest.mark.gpu_xfail('numpy', 'cpu')"), line


# -- 5. contract variants and expected failures -------------------------------------------

VARIANTS = '''\
import numpy as np
import pytest_gpucheck


@pytest_gpucheck.implements("sum", backend="numpy", name="skipping", variant="nan")
@pytest_gpucheck.implements("nansum", backend="numba-cpu", name="skipping")
def nansum(x, out):
    out[0] = np.nansum(x, dtype=np.float64) if x.dtype.kind == "f" else np.sum(x)


@pytest_gpucheck.implements("sum", backend="numpy", name="propagating", variant="nan")
def propagating(x, out):  # the broken twin: np.sum lets the NaN through
    out[0] = np.sum(x, dtype=np.float64) if x.dtype.kind == "f" else np.sum(x)


@pytest_gpucheck.implements("max", backend="numba-cpu", name="skipping", variant="nan")
def nanmax(x, out):
    out[0] = np.nan if x.dtype.kind == "f" and np.isnan(x).all() else np.nanmax(x)


@pytest_gpucheck.implements("nanmax", backend="numpy", name="propagating")
def propagating_max(x, out):
    out[0] = np.max(x)
'''


def test_a_nan_variant_is_checked_against_numpys_nan_function(tmp_path: Path) -> None:
    """numbagg's ``nansum`` skips NaN by design and ``sum``'s contract propagates it: the
    variant ``nan`` (``variant="nan"`` or its name ``nansum``) holds it to ``np.nansum``;
    an implementation that lets the NaN through fails that variant's ``one NaN`` case."""
    folder = project(tmp_path, VARIANTS)
    result = run_pytest(folder, *USER_RUN, "-rA", "--junitxml=junit.xml", timeout=300)
    text = output(result)
    assert result.returncode == 1, text[-3000:]
    from user_runs import junit_outcomes

    outcomes = {name: outcome for name, (outcome, _) in
                junit_outcomes(folder / "junit.xml").items()}
    assert outcomes == {
        "test_nansum[numpy:skipping]": "passed", "test_nansum[numba-cpu:skipping]": "passed",
        "test_nansum[numpy:propagating]": "failure", "test_nanmax[numba-cpu:skipping]": "passed",
        "test_nanmax[numpy:propagating]": "failure"}, text[-3000:]
    assert re.search(r"out\[0\]=nan, but should be -?\d+\.\d+ \[nansum\(n=\d+, dtype=float\d+, "
                     r"one NaN; boundary sweep \d+/\d+: one NaN\) on numpy:propagating\]", text)
    assert re.search(r"out\[0\]=nan, but should be -?\d+\.\d+ \[nanmax\(n=\d+, dtype=float\d+, "
                     r"one NaN; boundary sweep \d+/\d+: one NaN\) on numpy:propagating\]", text)
    # The variants sit in their kernels' row of the matrix.
    assert re.search(r"reductions\s+fail 2/3\s+pass 2\n", text), text[-3000:]


EXPECTED = '''\
import numpy as np
import pytest_gpucheck


def _nansum(x):
    return np.nansum(x, dtype=np.float64) if x.dtype.kind == "f" else np.sum(x)


# Every clause of sum's contract that a NaN-skipping sum departs from: the kernel's own
# class (a NaN among finite values) and the derived ones (where the NaN stands, all NaN).
SKIPS_NAN = {clause: "skips NaN by design" for clause in (
    "one NaN", "NaN first", "NaN middle", "NaN last", "NaN everywhere")}


@pytest_gpucheck.implements("sum", backend="numpy", name="skipping", xfail=SKIPS_NAN)
@pytest_gpucheck.implements("sum", backend="numba-cpu", name="skipping", xfail=SKIPS_NAN)
def skipping(x, out):
    out[0] = _nansum(x)


@pytest_gpucheck.implements("sum", backend="numpy", name="meets_it",
                            xfail={"one NaN": "thought it skipped NaN"})
def meets_it(x, out):  # strict: the clause it declares failing passes
    out[0] = np.sum(x, dtype=np.float64) if x.dtype.kind == "f" else np.sum(x)


@pytest_gpucheck.implements("sum", backend="numba-cpu", name="also_wrong", xfail=SKIPS_NAN)
def also_wrong(x, out):  # fails another clause too: a failure, not an expected one
    out[0] = _nansum(x) + (1 if x.size > 40 else 0)
'''


def test_a_clause_expected_to_fail_is_an_xfail_with_its_reason_and_strict(
        tmp_path: Path) -> None:
    """``xfail={"one NaN": reason}`` makes the item an expected failure when the ``one NaN``
    cases fail and everything else passes, shown with the reason in the terminal matrix, the
    JSON report and the Markdown summary; the item fails when the clause passes (strict) and
    when any other case fails."""
    folder = project(tmp_path, EXPECTED)
    result = run_pytest(folder, *USER_RUN, "-rA", "--junitxml=junit.xml",
                        "--gpu-report=report.json", "--gpu-summary=summary.md", timeout=300)
    text = output(result)
    assert result.returncode == 1, text[-3000:]
    from user_runs import junit_outcomes

    outcomes = junit_outcomes(folder / "junit.xml")
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_sum[numpy:skipping]": "skipped", "test_sum[numba-cpu:skipping]": "skipped",
        "test_sum[numpy:meets_it]": "failure", "test_sum[numba-cpu:also_wrong]": "failure"}
    reason = "clause 'one NaN' expected to fail: skips NaN by design (seen: n="
    assert reason in outcomes["test_sum[numpy:skipping]"][1]
    assert "clause 'one NaN' is expected to fail (thought it skipped NaN), but its 2 case(s) " \
           "passed: the implementation meets it" in outcomes["test_sum[numpy:meets_it]"][1]
    assert "out[0]=" in outcomes["test_sum[numba-cpu:also_wrong]"][1]
    assert re.search(r"reductions\s+fail 1/1 \+1 xfail\s+fail 1/1 \+1 xfail", text), text[-3000:]
    assert re.search(r"numpy in reductions \(1\), numba-cpu in reductions \(1\) xfail "
                     r"\(clause 'one NaN' expected to fail: skips NaN by design", text) or \
        text.count("xfail (clause 'one NaN' expected to fail: skips NaN by design") == 2, \
        text[-3000:]
    import json

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["xfail"] == 2
    cells = {cell["backend"]: cell for cell in report["cells"]}
    for backend in ("numpy", "numba-cpu"):
        assert cells[backend]["xfail"] == 1
        assert cells[backend]["summary"] == "fail 1/1 +1 xfail"
        (why,) = cells[backend]["skip_reasons"]
        assert why.startswith(f"xfail ({reason}")
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    assert "| reductions | ❌ fail 1/1 +1 xfail | ❌ fail 1/1 +1 xfail |" in summary
    assert "xfail (clause 'one NaN' expected to fail: skips NaN by design" in summary


@pytest.mark.parametrize(("registration", "expected"), [
    ('"sum", backend="numpy", xfail={"propagates_nan": "why"}',
     "ERROR: conftest.py:4: sum on numpy: xfail names no clause of its contract: "
     "'propagates_nan'; its clauses (the value classes of its boundary sweep) are "
     "'all negative', 'subnormal', 'fractional', 'one NaN', 'NaN first', 'NaN middle', "
     "'NaN last', 'NaN everywhere', '+inf', '-inf', '-0.0', 'float extremes', "
     "'integer extremes', 'zero'"),
    ('"sum", backend="numpy", xfail={"one NaN": ""}',
     "ERROR: conftest.py:4: sum on numpy: xfail['one NaN'] needs a reason, a non-empty "
     "string"),
    ('"histogram", backend="numpy", variant="nan"',
     "ERROR: conftest.py:4: 'histogram' has no variant 'nan'; the variants are: sum "
     "variant='nan' (nansum), dot variant='nan' (nandot), weighted_sum variant='nan' "
     "(nanweighted_sum), sum_of_squares variant='nan' (nansum_of_squares), max "
     "variant='nan' (nanmax)"),
])
def test_a_bad_variant_or_clause_is_one_line(tmp_path: Path, registration: str,
                                             expected: str) -> None:
    conftest = ("import pytest_gpucheck\n\n\n"
                f"@pytest_gpucheck.implements({registration})\n"
                "def f(x, out):\n    out[0] = 0\n")
    folder = project(tmp_path, conftest)
    assert one_error_line(run_pytest(folder, *USER_RUN, timeout=120)) == expected


XFAIL_EXAMPLE = re.compile(r"<!-- xfail example: (\S+) (\S+) -->\n```python\n(.*?)```", re.DOTALL)


def test_the_documented_expected_failure_runs_as_documented(tmp_path: Path) -> None:
    """docs/kernels.md's ``xfail=`` example, as its conftest.py: an expected failure with
    its reason."""
    doc = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"
    ((backend, kernel, code),) = XFAIL_EXAMPLE.findall(doc.read_text(encoding="utf-8"))
    folder = project(tmp_path, code)
    result = run_pytest(folder, "--gpu-conformance", "--gpu-impls=user",
                        f"--gpu-backends={backend}", "-k", f"test_{kernel}[", "-n0", "-rx",
                        "--hypothesis-profile=ci", timeout=300)
    text = output(result)
    assert result.returncode == 0, text[-3000:]
    assert "1 xfailed" in text, text[-2000:]
    assert re.search(rf"XFAIL \S*test_{kernel}\[{backend}:mine\] - clause 'one NaN' expected "
                     "to fail: skips NaN by design: use it as nansum", text), text[-3000:]
    assert re.search(r"reductions\s+xfail 1", text), text[-3000:]


@pytest.mark.parametrize(("typed", "expected"), [
    ("--gpu-backend=cpu", "ERROR: --gpu-backend is not an option; did you mean --gpu-backends? "
                          "(--gpu-backends=cpu)"),
    ("--gpu-conformence", "ERROR: --gpu-conformence is not an option; did you mean "
                          "--gpu-conformance? (--gpu-conformance)"),
])
def test_a_mistyped_option_names_the_option_meant(tmp_path: Path, typed: str,
                                                  expected: str) -> None:
    """``--gpu-backend=cpu`` (singular) got pytest's usage text and ``unrecognized arguments``,
    naming no fix."""
    folder = project(tmp_path, "", **{"test_a.py": "def test_a():\n    pass\n"})
    assert one_error_line(run_pytest(folder, typed, "-n0", timeout=120)) == expected


def test_an_unknown_option_far_from_ours_is_left_to_pytest(tmp_path: Path) -> None:
    """The twin: nothing close, pytest's own error stands (exit 4)."""
    folder = project(tmp_path, "", **{"test_a.py": "def test_a():\n    pass\n"})
    result = run_pytest(folder, "--gpu-xyzzy", "-n0", timeout=120)
    assert result.returncode == 4
    assert "unrecognized arguments: --gpu-xyzzy" in output(result)
    assert "did you mean" not in output(result)
