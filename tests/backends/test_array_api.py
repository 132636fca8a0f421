"""``xp`` is the array API namespace of each backend, as the ecosystem spells it
(``array_api_compat.array_namespace``), and the bare module stays ``gpu_backend.module``."""

from __future__ import annotations

import pytest

TRANSPOSE = """
def test_x(xp):
    assert xp.permute_dims(xp.ones((2, 3)), (1, 0)).shape == (3, 2)


def test_standard_names(xp):
    x = xp.asarray([3.0, 1.0, 3.0])
    assert xp.isdtype(x.dtype, "real floating")
    assert xp.unique_values(x).shape == (2,)
    assert xp.astype(x, xp.int32).dtype == xp.int32
    assert xp.vecdot(x, x).shape == ()
    assert xp.matrix_transpose(xp.ones((2, 3))).shape == (3, 2)
    assert "boolean indexing" in xp.__array_namespace_info__().capabilities()
"""

# What every backend with an array namespace takes part in; the CPU tier's frameworks.
NAMESPACED = "numpy,numba-cpu,jax-cpu,torch-cpu"


def _cpu_frameworks() -> None:
    for module in ("numba", "jax", "torch", "array_api_compat"):
        pytest.importorskip(module)


def test_the_standards_names_pass_on_every_backend_with_a_namespace(
    pytester: pytest.Pytester,
) -> None:
    _cpu_frameworks()
    pytester.makepyfile(test_user=TRANSPOSE)
    result = pytester.runpytest(f"--gpu-backends={NAMESPACED}", "-v")
    result.stdout.fnmatch_lines(["*test_x?torch-cpu? PASSED*"])
    result.assert_outcomes(passed=8)


def test_the_bare_module_is_what_the_check_rejects(pytester: pytest.Pytester) -> None:
    """The broken twin: a project ``xp`` that hands out the bare module (the plugin's
    ``xp`` before) fails on torch-cpu, which lacks ``permute_dims`` and the rest."""
    _cpu_frameworks()
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def xp(gpu_backend):
            return gpu_backend.module
        """
    )
    pytester.makepyfile(test_user=TRANSPOSE)
    result = pytester.runpytest("--gpu-backends=numpy,torch-cpu", "-v")
    result.stdout.fnmatch_lines(["*test_x?torch-cpu? FAILED*"])
    result.stdout.fnmatch_lines(["*has no attribute 'permute_dims'*"])


def test_module_is_the_framework_and_xp_its_namespace() -> None:
    pytest.importorskip("torch")
    compat = pytest.importorskip("array_api_compat")
    import torch

    from pytest_gpucheck.backends import backend_class

    backend = backend_class("torch-cpu")()
    assert backend.module is torch
    assert backend.xp is compat.array_namespace(torch.zeros(1))


def test_without_array_api_compat_a_namespace_of_its_own_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NumPy >= 2 is an array API namespace itself; torch is not, and its ``xp`` then
    raises the one line naming the install (the ``xp`` fixture skips with it)."""
    import sys

    import numpy as np

    from pytest_gpucheck.backends import backend_class
    from pytest_gpucheck.backends.base import BackendUnavailable

    monkeypatch.setitem(sys.modules, "array_api_compat", None)
    assert backend_class("numpy")().xp is np
    pytest.importorskip("torch")
    with pytest.raises(BackendUnavailable, match="pip install array-api-compat"):
        _ = backend_class("torch-cpu")().xp


def test_array_api_strict_runs_xp_tests_and_is_not_applicable_to_the_kernels(
    pytester: pytest.Pytester,
) -> None:
    """The user's ``xp`` test passes on the strict namespace; a bundled kernel suite shows
    ``n/a`` with its reason there, never red and never a column of "no implementation"."""
    pytest.importorskip("array_api_strict")
    pytester.makepyfile(test_user=TRANSPOSE)
    result = pytester.runpytest("--gpu-backends=array-api-strict", "--gpu-conformance",
                                "-k", "test_user or test_vector_add")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines([
        "  array-api-strict in elementwise (1) n/a: not applicable: array-api-strict has no "
        "kernels of its own*"])


def test_array_api_strict_uses_only_the_standard() -> None:
    """What makes the backend worth having: NumPy's extras are refused on its arrays."""
    strict = pytest.importorskip("array_api_strict")
    import numpy as np

    from pytest_gpucheck.backends import backend_class

    backend = backend_class("array-api-strict")()
    x = backend.to_device(np.arange(4.0))
    assert backend.xp is strict
    with pytest.raises(AttributeError):
        strict.ascontiguousarray(x)  # NumPy's, not the standard's
    np.testing.assert_array_equal(backend.to_host(strict.flip(x)), [3.0, 2.0, 1.0, 0.0])


def test_without_array_api_strict_the_backend_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from pytest_gpucheck.backends import backend_class

    monkeypatch.setitem(sys.modules, "array_api_strict", None)
    probe = backend_class("array-api-strict")().probe()
    assert not probe.available
    assert probe.reason == (
        "array_api_strict is not installed (array_api_strict); install it with: pip install "
        "'pytest-gpucheck[cpu]' (or: pip install array-api-strict)")
