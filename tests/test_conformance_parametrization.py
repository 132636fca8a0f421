"""The ``impl`` parametrization of the suites: ids, skip reasons, ``--gpu-impls``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpucheck import conformance

pytestmark = pytest.mark.slow

SUITES = str(Path(conformance.__file__).parent)
REPO = str(Path(__file__).parent.parent)

USER_IMPLS = """
import pytest_gpucheck

@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
def vector_add(a, b, out):
    out[...] = a + b
"""


@pytest.fixture(autouse=True)
def _importable_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", REPO)
    monkeypatch.delenv("CI", raising=False)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(user_impls=USER_IMPLS)
    return pytester.runpytest_subprocess(
        SUITES, "--rootdir", str(pytester.path), "-p", "user_impls", "-p", "no:cacheprovider",
        "-m", "gpu_kernel", "-n0", *args,
    )


def test_user_implementation_runs_and_other_cells_skip_with_reasons(
        pytester: pytest.Pytester) -> None:
    # It names jax-cpu: without it (the core alone) it skips.
    pytest.importorskip("jax")
    result = _run(pytester, "--gpu-backends=numpy,jax-cpu,gpu", "--gpu-impls=user",
                  "-k", "test_vector_add[", "-rs", "--hypothesis-profile=ci")
    # numpy:mine runs; jax-cpu and the five GPU backends are visible skips.
    result.assert_outcomes(passed=1, skipped=6)
    result.stdout.fnmatch_lines([
        "*SKIPPED*no user implementation of vector_add registered for jax-cpu "
        "(--gpu-impls=user)*",
    ])


def test_ids_are_backend_colon_name_and_bundled_filter(pytester: pytest.Pytester) -> None:
    # It names numba-cudasim: without it (the core alone) it skips.
    pytest.importorskip("numba")
    result = _run(pytester, "--gpu-backends=numpy,numba-cudasim", "--gpu-impls=all",
                  "--collect-only", "-q", "-k", "test_vector_add[")
    result.stdout.fnmatch_lines([
        "*test_vector_add[[]numpy:mine[]]",
        "*test_vector_add[[]numba-cudasim:*[]]",
    ])
    bundled = _run(pytester, "--gpu-backends=numpy", "--gpu-impls=bundled", "--collect-only",
                   "-q", "-k", "test_vector_add[")
    assert "numpy:mine" not in bundled.stdout.str()


def test_not_applicable_cells_are_skipped_with_the_registry_reason(
        pytester: pytest.Pytester) -> None:
    # It names jax-cpu: without it (the core alone) it skips.
    pytest.importorskip("jax")
    result = _run(pytester, "--gpu-backends=jax-cpu", "-k", "test_index_map_1d[", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not applicable:*"])


def test_missing_kernel_marker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    suite = pytester.mkpydir("suites")
    (suite / "conftest.py").write_text(
        (Path(SUITES) / "conftest.py").read_text(encoding="utf-8"),
        encoding="utf-8")
    (suite / "test_mine.py").write_text("def test_x(impl):\n    pass\n", encoding="utf-8")
    result = pytester.runpytest_subprocess(str(suite), "-p", "no:cacheprovider", "-n0")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*requests `impl` but has no @pytest.mark.gpu_kernel*"])
    assert "Traceback" not in result.stdout.str()


def test_unknown_kernel_names_the_known_ones(pytester: pytest.Pytester) -> None:
    suite = pytester.mkpydir("suites")
    (suite / "conftest.py").write_text(
        (Path(SUITES) / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    (suite / "test_mine.py").write_text(
        "import pytest\n\n@pytest.mark.gpu_kernel('vector_ad')\n"
        "def test_x(impl):\n    pass\n", encoding="utf-8")
    result = pytester.runpytest_subprocess(str(suite), "-p", "no:cacheprovider", "-n0")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*no conformance spec for kernel 'vector_ad'; known: vector_add*"])


MISUSED_CONTRACT = """
import pytest_gpucheck

@pytest_gpucheck.implements("vector_add", backend="jax-cpu", name="writes_out")
def vector_add(a, b, out):
    out[...] = a + b
"""


def test_contract_misuse_fails_with_the_fix(pytester: pytest.Pytester) -> None:
    # It names jax-cpu: without it (the core alone) it skips.
    pytest.importorskip("jax")
    # The signature fits the contract; only the backend makes `out` impossible,
    # which the suite reports when it runs the cell.
    pytester.makepyfile(user_impls=MISUSED_CONTRACT)
    result = pytester.runpytest_subprocess(
        SUITES, "--rootdir", str(pytester.path), "-p", "user_impls", "-p", "no:cacheprovider",
        "-m", "gpu_kernel", "-n0", "--gpu-backends=numpy,jax-cpu", "--gpu-impls=user",
        "-k", "test_vector_add[",
    )
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*takes `out`, but jax-cpu arrays are immutable: return the result instead*",
    ])
