"""``gpu_xfail(...)`` / ``gpu_skip(...)``: an expected failure, or a skip, on named backends
only, with a reason and ``strict`` as pytest's ``xfail``, one line in the matrix."""

from __future__ import annotations

import pytest

MARKED = """
import pytest


@pytest.mark.gpu_xfail("torch-cpu", reason="torch rounds half away from zero", strict=True)
def test_round(gpu_backend):
    assert gpu_backend.name != "torch-cpu"


@pytest.mark.gpu_skip("numpy", reason="too slow on the reference")
def test_slow(gpu_backend):
    pass
"""


def _torch() -> None:
    pytest.importorskip("torch")


def test_xfail_and_skip_act_on_the_named_backends_only(pytester: pytest.Pytester) -> None:
    _torch()
    pytester.makepyfile(test_user=MARKED)
    result = pytester.runpytest("--gpu-backends=numpy,torch-cpu", "-v", "--gpu-report=r.json")
    result.stdout.fnmatch_lines([
        "*test_round?numpy? PASSED*",
        "*test_round?torch-cpu? XFAIL*torch rounds half away from zero*",
        "*test_slow?numpy? SKIPPED*too slow on the reference*",
        "*test_slow?torch-cpu? PASSED*",
    ])
    result.assert_outcomes(passed=2, xfailed=1, skipped=1)
    # One line each in the matrix, the expected failure read as such (not as a skip).
    result.stdout.fnmatch_lines([
        "  numpy in user (1) skip: too slow on the reference",
        "  torch-cpu in user (1) xfail (torch rounds half away from zero)",
    ])


def test_strict_xfail_that_passes_fails_the_run(pytester: pytest.Pytester) -> None:
    """The check's broken twin: the named backend passes, so strict=True fails it (XPASS)."""
    _torch()
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu_xfail("torch-cpu", reason="fixed upstream", strict=True)
        def test_fixed(gpu_backend):
            pass

        @pytest.mark.gpu_xfail("torch-cpu", reason="flaky", strict=False)
        def test_lenient(gpu_backend):
            pass
        """
    )
    result = pytester.runpytest("--gpu-backends=numpy,torch-cpu", "-v")
    result.stdout.fnmatch_lines(["*test_fixed?torch-cpu? FAILED*",
                                 "*test_lenient?torch-cpu? XPASS*"])
    result.assert_outcomes(passed=2, failed=1, xpassed=1)


def test_a_group_name_covers_its_backends(pytester: pytest.Pytester) -> None:
    """``cpu`` names numpy too (names are read as ``--gpu-backends`` reads them)."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu_xfail("cpu", reason="not on the host")
        def test_host(gpu_backend):
            raise AssertionError("host")
        """
    )
    result = pytester.runpytest("--gpu-backends=numpy")
    result.assert_outcomes(xfailed=1)


@pytest.mark.parametrize(("marker", "message"), [
    ('gpu_xfail("torch-gpu", reason="x")',
     "*test_user.py::test_x: @pytest.mark.gpu_xfail: unknown backend or group "
     "'torch-gpu'; valid values:*"),
    ("gpu_skip()", "*@pytest.mark.gpu_skip names no backend; write e.g. gpu_skip('torch-cpu'*"),
    ('gpu_xfail("numpy", reson="typo")',
     "*@pytest.mark.gpu_xfail: unknown keyword 'reson'; it takes reason, strict, raises, run"),
])
def test_bad_marker_is_one_line_and_exit_4(pytester: pytest.Pytester, marker: str,
                                           message: str) -> None:
    pytester.makepyfile(test_user=f"""
        import pytest

        @pytest.mark.{marker}
        def test_x(gpu_backend):
            pass
        """)
    result = pytester.runpytest("--gpu-backends=numpy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "passed" not in result.stdout.str()  # nothing ran


class _Item:
    """What :func:`backend_outcome_marks` reads of an item: its markers and parameters."""

    def __init__(self, params: dict[str, object], *marks: pytest.MarkDecorator) -> None:
        from types import SimpleNamespace

        self.callspec = SimpleNamespace(params=params)
        self.marks = [mark.mark for mark in marks]

    def iter_markers(self, name: str | None = None):  # type: ignore[no-untyped-def]
        return iter([mark for mark in self.marks if name is None or mark.name == name])


def test_the_suites_impl_and_interop_pairs_are_marked_by_their_backends() -> None:
    from types import SimpleNamespace

    from pytest_gpucheck.selection import backend_outcome_marks

    xfail = pytest.mark.gpu_xfail("jax-cpu", reason="known")
    cell = SimpleNamespace(backend="jax-cpu")
    pair = SimpleNamespace(converter=SimpleNamespace(producer="numpy", consumer="jax-cpu"))
    for params in ({"impl": cell}, {"interop_pair": pair}, {"gpu_backend": "jax-cpu"}):
        (mark,) = backend_outcome_marks(_Item(params, xfail))  # type: ignore[arg-type]
        assert mark.mark.name == "xfail"
        assert mark.mark.kwargs == {"reason": "known"}
    # Another backend, or no backend parameter at all: nothing.
    assert backend_outcome_marks(_Item({"gpu_backend": "numpy"}, xfail)) == []  # type: ignore[arg-type]
    assert backend_outcome_marks(_Item({}, xfail)) == []  # type: ignore[arg-type]
