"""The user-facing fixtures and markers, exercised through pytester."""

from __future__ import annotations

import pytest

USER_TEST = """
import numpy as np
import pytest


def test_roundtrip(gpu_backend):
    host = np.arange(6, dtype=np.float32)
    back = gpu_backend.to_host(gpu_backend.to_device(host))
    np.testing.assert_array_equal(back, host)
    assert back.dtype == np.float32


@pytest.mark.gpu_backends("torch-cpu", "jax-cpu")
def test_restricted(gpu_backend):
    assert gpu_backend.name in ("torch-cpu", "jax-cpu")


@pytest.mark.requires_gpu
def test_gpu_only(gpu_backend):
    assert gpu_backend.tier == "gpu"


def test_xp(xp, gpu_backend):
    assert xp.asarray([1, 2, 3]).shape[0] == 3
"""


def test_one_item_per_selected_backend_with_backend_ids(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("numba")
    pytest.importorskip("jax")
    pytest.importorskip("torch")
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("--gpu-backends=numpy,numba-cpu,jax-cpu,torch-cpu", "-v", "-rs")
    result.stdout.fnmatch_lines(
        [
            "*test_roundtrip?numpy? PASSED*",
            "*test_roundtrip?numba-cpu? PASSED*",
            "*test_roundtrip?jax-cpu? PASSED*",
            "*test_roundtrip?torch-cpu? PASSED*",
            "*test_restricted?jax-cpu? PASSED*",
            "*test_restricted?torch-cpu? PASSED*",
            "*test_gpu_only?no-backend? SKIPPED*",
        ]
    )
    result.stdout.no_fnmatch_line("*test_restricted?numpy?*")
    # 4 roundtrip + 2 restricted + 4 xp; the GPU-only test is skipped with its reason.
    result.assert_outcomes(passed=10, skipped=1)
    result.stdout.fnmatch_lines(
        ["*restricted to numba-cuda, cupy, jax-gpu, cuda-python, torch-cuda*"]
    )


def test_default_selection_is_numpy_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(
        ["gpucheck: backends numpy (default*", "*test_roundtrip?numpy? PASSED*"]
    )
    result.stdout.no_fnmatch_line("*torch-cpu*PASSED*")


def test_groups_show_unavailable_backends_as_skipped_with_reason(
    pytester: pytest.Pytester,
) -> None:
    from pytest_gpucheck.backends import get_backend

    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("--gpu-backends=gpu", "-rs")
    probe = get_backend("cupy").probe()
    if probe.available:
        pytest.skip("cupy is available here")
    lines = result.stdout.lines
    assert f"  cupy           skipped: {probe.reason}" in lines
    assert any(line.startswith("SKIPPED") and line.endswith(probe.reason) for line in lines)
    assert result.ret == pytest.ExitCode.OK


def test_xp_skips_backends_without_a_namespace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_xp(xp):
            pass
        """
    )
    from pytest_gpucheck.backends import get_backend

    backend = get_backend("cuda-python")
    result = pytester.runpytest("--gpu-backends=numpy,gpu", "-rs")
    result.assert_outcomes(passed=1, skipped=5)
    assert backend.xp is None


def test_strict_markers_are_clean(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu_backends("cpu")
        @pytest.mark.gpu_family("mine")
        def test_a(gpu_backend):
            pass

        @pytest.mark.requires_gpu
        def test_b():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "--gpu-backends=numpy")
    result.assert_outcomes(passed=1, skipped=1)


def test_bad_marker_argument_names_valid_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu_backends("cuda")
        def test_a(gpu_backend):
            pass
        """
    )
    result = pytester.runpytest()
    result.stderr.fnmatch_lines(
        ["ERROR: *::test_a: @pytest.mark.gpu_backends: unknown backend or group 'cuda'; valid "
         "values: all, cpu*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_gpu_device_fixture_reports_the_selection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_dev(gpu_device):
            assert gpu_device.index == 0
            assert "auto" in gpu_device.how
            print(repr(gpu_device))
        """
    )
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*<GpuDevice 0 (auto*"])


def test_fixtures_have_docstrings_in_pytest_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--fixtures")
    # Each fixture with its docstring under it; pytest orders the fixtures (a session-scoped
    # gpu_device comes before the function-scoped ones), which is not the point here.
    for fixture, docstring in (
            ("gpu_backend -- *",
             "    The backend this test runs on, one test item per selected backend."),
            ("xp -- *", "    The Python array API namespace of ``gpu_backend``*"),
            ("gpu_device* -- *", "    The CUDA device this process uses*")):
        result.stdout.fnmatch_lines([fixture, docstring])


SIMULATOR_TEST = """
import numpy as np
from numba import cuda
import pytest


@cuda.jit
def add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


@pytest.mark.gpu_backends("numba-cudasim")
def test_kernel(gpu_backend):
    data = gpu_backend.to_device(np.zeros(5))
    add_one[2, 4](data)
    assert gpu_backend.to_host(data).tolist() == [1, 1, 1, 1, 1]


@pytest.mark.gpu_backends("numba-cudasim")
def test_kernel_fails(gpu_backend):
    data = gpu_backend.to_device(np.zeros(5))
    add_one[1, 2](data)
    assert gpu_backend.to_host(data).tolist() == [1, 1, 1, 1, 1]
"""


@pytest.mark.slow
def test_simulator_items_run_in_a_child_process_transparently(pytester: pytest.Pytester) -> None:
    # The simulator is numba's: without it (the core alone) it skips.
    pytest.importorskip("numba")
    pytester.makepyfile(test_sim=SIMULATOR_TEST)
    result = pytester.runpytest("--gpu-backends=numba-cpu,numba-cudasim", "-v")
    result.stdout.fnmatch_lines(
        [
            "*test_kernel?numba-cudasim? PASSED*",
            "*test_kernel_fails?numba-cudasim? FAILED*",
            "*assert ?1.0, 1.0, 0.0, 0.0, 0.0? == ?1, 1, 1, 1, 1?*",
        ]
    )
    result.assert_outcomes(passed=1, failed=1)
    # The parent process imported the real numba.cuda (it collected the module);
    # only the child could run the kernel, on the simulator.
    import numba

    assert not numba.config.ENABLE_CUDASIM


@pytest.mark.slow
def test_in_process_items_around_simulator_items_keep_their_fixture_lifecycle(
    pytester: pytest.Pytester,
) -> None:
    # The simulator is numba's: without it (the core alone) it skips.
    pytest.importorskip("numba")
    module = """
        import pytest

        EVENTS = []

        @pytest.fixture(scope="module")
        def resource():
            EVENTS.append("up")
            yield
            EVENTS.append("down")

        def test_one(gpu_backend, resource):
            pass
        """
    pytester.makepyfile(test_a=module, test_b=module)
    result = pytester.runpytest("--gpu-backends=numpy,numba-cudasim", "-v")
    # Each module's numpy item sets up its module fixture after the previous
    # module's simulator item, which ran in the child, tore the old one down.
    result.assert_outcomes(passed=4)
