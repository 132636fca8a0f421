"""The ``impl`` parametrization of the suites: ids, skip reasons, ``--gpu-impls``.

The runs are in-process (``pytester.runpytest``): what they check is collection,
parametrization and the verdicts of one process, which a fresh interpreter proves no
better (tests/conftest.py imports the frameworks up front and puts the registry back
after each test).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from pytest_gpucheck import conformance, registry

pytestmark = pytest.mark.slow

SUITES = str(Path(conformance.__file__).parent)
REPO = str(Path(__file__).parents[2])

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


@pytest.fixture(autouse=True)
def _hypothesis_profile_stays() -> Iterator[None]:
    """``--hypothesis-profile=gpucheck-ci`` of an in-process run loads that profile in this
    very process: the one this session runs under is put back after the test."""
    profile = settings.get_current_profile_name()
    yield
    settings.load_profile(profile)


@pytest.fixture(autouse=True)
def _bundled_implementations_register_in_each_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/conftest.py puts the registry back after each test, but ``load_bundled``
    imports the bundled modules once per process: without this, a run after the first
    one in this worker would find the bundled implementations (and the jax-cpu n/a
    records) gone.  Each in-process run imports them afresh, as a user's process does."""
    monkeypatch.setattr(registry, "_bundled_loaded", False)
    for ep in registry._entry_points(registry.IMPLEMENTATIONS_GROUP):
        monkeypatch.delitem(sys.modules, ep.module, raising=False)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(user_impls=USER_IMPLS)
    pytester.syspathinsert()  # `-p user_impls` imports it, as from the project's folder
    return pytester.runpytest(
        SUITES, "--rootdir", str(pytester.path), "-p", "user_impls", "-p", "no:cacheprovider",
        "-m", "gpu_kernel", "-n0", *args,
    )


def test_user_implementation_runs_and_other_cells_skip_with_reasons(
        pytester: pytest.Pytester) -> None:
    # It names jax-cpu: without it (the core alone) it skips.
    pytest.importorskip("jax")
    result = _run(pytester, "--gpu-backends=numpy,jax-cpu,gpu", "--gpu-impls=user",
                  "-k", "test_vector_add[", "-rs", "--hypothesis-profile=gpucheck-ci")
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
    result = pytester.runpytest(str(suite), "-p", "no:cacheprovider", "-n0")
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
    result = pytester.runpytest(str(suite), "-p", "no:cacheprovider", "-n0")
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
    pytester.syspathinsert()
    result = pytester.runpytest(
        SUITES, "--rootdir", str(pytester.path), "-p", "user_impls", "-p", "no:cacheprovider",
        "-m", "gpu_kernel", "-n0", "--gpu-backends=numpy,jax-cpu", "--gpu-impls=user",
        "-k", "test_vector_add[",
    )
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*takes `out`, but jax-cpu arrays are immutable: return the result instead*",
    ])
