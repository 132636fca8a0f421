"""The bundled CUDA C kernels, executed on the host against the NumPy references.

The kernels that ``cupy`` (``raw``) and ``cuda-python`` launch on a GPU run
here through the same host drivers, compiled as C++ with one OS thread per
CUDA thread (``tests/cuda_c_host.py``): every dtype, sizes 0 and 1 and sizes
that span several blocks, contiguous and strided/transposed inputs, outputs
inside guard bands, the index maps on odd launches.  Then bugs are planted in
the CUDA C and shown to be rejected.  Skipped without a C++ compiler.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from bundled_impl_checks import (
    INDEX_MAP_LAUNCHES,
    check_implementation,
    check_index_map,
    check_monte_carlo_samples,
)
from cuda_c_host import HostLauncher, Patch, compiler

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.checking.guards import GuardedBuffer
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.conformance.implementations.cuda_c import drivers
from pytest_gpucheck.reference_kernels import CORE_KERNELS as KERNELS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++ or clang++)"),
]

#: Sizes up to several reduction blocks (256 threads each), so partial blocks count.
SIZES = (0, 1, 33, 300)
DRIVEN = [k for k in KERNELS if not k.startswith("index_map") and k != "monte_carlo_pi"]


def _on_host(kernel: str, patch: Patch | None = None) -> Any:
    """The driver of ``kernel`` bound to a host launcher: a callable with the contract signature."""
    driver = getattr(drivers, kernel + "_" if kernel in ("sum", "max") else kernel)
    return functools.partial(driver, HostLauncher(patch))


@pytest.fixture(scope="module")
def host() -> Any:
    """The NumPy backend: host arrays stand in for device arrays."""
    return get_backend("numpy")


@pytest.mark.parametrize("kernel", DRIVEN)
def test_kernel_matches_reference(host: Any, kernel: str) -> None:
    """Each kernel equals the reference on contiguous and on strided/transposed inputs."""
    assert check_implementation(host, _on_host(kernel), kernel, sizes=SIZES) > 0
    assert check_implementation(host, _on_host(kernel), kernel, sizes=SIZES, strided=True) > 0


@pytest.mark.parametrize("kernel", sorted(INDEX_MAP_LAUNCHES))
def test_index_map_on_each_launch(host: Any, kernel: str) -> None:
    """Blocks of 1, 32, odd shapes and 1024 threads; the grid-stride grid is small."""
    check_index_map(host, _on_host(kernel), kernel)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_monte_carlo_pi(dtype: str) -> None:
    """Counter-based samples: in [0, 1)^2, no repeats, pi within 5 standard errors."""
    out = np.empty((4000, 2), dtype)
    drivers.monte_carlo_pi(HostLauncher(), 12345, out)
    check_monte_carlo_samples(out, dtype)
    again = np.empty_like(out)
    drivers.monte_carlo_pi(HostLauncher(), 12345, again)
    np.testing.assert_array_equal(again, out)


# -- planted bugs are rejected -------------------------------------------------------------------
def _replace(old: str, new: str) -> Patch:
    def patch(source: str) -> str:
        assert old in source, f"the planted bug no longer applies: {old!r} not in the source"
        return source.replace(old, new)

    return patch


def _rejected(host: Any, kernel: str, old: str, new: str, sizes: tuple[int, ...],
              message: str = "Arrays are not equal") -> None:
    """``kernel`` with ``old`` replaced by ``new`` fails check_implementation at ``sizes``
    with ``message``."""
    with pytest.raises(AssertionError, match=message):
        check_implementation(host, _on_host(kernel, _replace(old, new)), kernel, sizes=sizes)


def test_rejects_missing_bounds_check(host: Any) -> None:
    """index_map_1d without ``if (i < n)`` writes past the end of ``out``: the guard sees it."""
    broken = _on_host("index_map_1d", _replace("if (i < n) out[i * s0]", "out[i * s0]"))
    # On the full launches of the index-map check the overrun runs past any guard,
    # so it is shown here on a launch only 3 threads too wide.
    # The same overrun inside guard bands is reported (GUARD_WIDTH 8 > 3).
    buffer = GuardedBuffer(host, "out", (37,), np.int32, np.int32(-7))
    broken(out=buffer.view, launch=LaunchConfig((1,), (40,)))
    assert buffer.read().describe() == "wrote 3 elements past the end of out: indices 37, 38, 39"


def test_rejects_swapped_x_and_y(host: Any) -> None:
    """index_map_2d reading rows from x and columns from y fails on a non-square grid."""
    broken = _on_host("index_map_2d", _replace("idx_t c = global_x(), r = global_y();\n"
                                               "    if (r < rows && c < cols) out[",
                                               "idx_t c = global_y(), r = global_x();\n"
                                               "    if (r < rows && c < cols) out["))
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        check_index_map(host, broken, "index_map_2d")


def test_rejects_grid_stride_loop_that_skips_the_tail(host: Any) -> None:
    """A grid-stride kernel that runs one iteration leaves the tail poisoned."""
    broken = _on_host("index_map_grid_stride",
                      _replace("i < n; i += grid_threads_x()) out[i * s0] = (T)i;",
                               "i < n && i < grid_threads_x(); ++i) out[i * s0] = (T)i;"))
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        check_index_map(host, broken, "index_map_grid_stride")


def test_rejects_reduction_that_drops_the_last_block(host: Any) -> None:
    """A sum whose last block never adds its partial is caught on multi-block inputs."""
    _rejected(host, "sum",
              "if (threadIdx.x == 0) atomic_add(out, s[0]);",
              "if (threadIdx.x == 0 && blockIdx.x + 1 < gridDim.x) "
              "atomic_add(out, s[0]);",
              (300,))


def test_rejects_reduction_that_counts_an_element_twice(host: Any) -> None:
    """Each thread reading its first element twice doubles some terms."""
    _rejected(host, "sum",
              "T acc = (T)0;\n    for (idx_t i = global_x(); i < n;",
              "T acc = global_x() < n ? x[global_x() * sx] : (T)0;\n"
              "    for (idx_t i = global_x(); i < n;",
              (33,))


def test_rejects_halo_from_the_wrong_neighbour(host: Any) -> None:
    """Filling the low ghosts from the high ghosts instead of the interior is caught."""
    _rejected(host, "halo_exchange_1d",
              "base[i * s_elem] = base[(n - 2 * w + i) * s_elem];",
              "base[i * s_elem] = base[(n - w + i) * s_elem];",
              (1, 7))


def test_rejects_heat_step_in_place(host: Any) -> None:
    """A heat step that writes ``u`` instead of ``out`` is caught (input changed, out poisoned)."""
    _rejected(host, "heat_step_1d",
              "out[i * so] = centre + alpha",
              "((T*)u)[i * su] = centre + alpha",
              (7,), "wrote its input")


def test_rejects_tiled_matmul_without_partial_tiles(host: Any) -> None:
    """A tiled matmul that drops the last partial tile along k gets the wrong sums."""
    _rejected(host, "matmul_tiled",
              "for (idx_t t = 0; t < k; t += TILE)",
              "for (idx_t t = 0; t + TILE <= k; t += TILE)",
              (7,))


# -- the registered raw implementations, end to end ----------------------------------------------
def _registered_raw() -> list[Any]:
    import pytest_gpucheck.conformance.implementations.cuda_python_impls as cuda_python_impls
    import pytest_gpucheck.conformance.implementations.cupy_impls as cupy_impls
    from pytest_gpucheck.registry import implementations

    modules = {cupy_impls.__name__: cupy_impls, cuda_python_impls.__name__: cuda_python_impls}
    return [pytest.param(modules[impl.func.__module__], impl, id=f"{impl.id}:{impl.kernel}")
            for backend in ("cupy", "cuda-python")
            for impl in implementations(backend=backend, origin="bundled")
            if impl.func.__module__ in modules and impl.name in ("raw", "nvrtc")]


@pytest.mark.parametrize(("module", "impl"), _registered_raw())
def test_registered_raw_implementation_on_host(host: Any, module: Any, impl: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each registered ``raw``/``nvrtc`` function passes its arguments to the right driver.

    Only the framework's launcher is swapped for the host one: registration,
    argument order, driver and CUDA C all run as they would on a GPU.
    """
    monkeypatch.setattr(module, "_run", lambda _array: HostLauncher())
    if impl.takes_launch:
        check_index_map(host, impl.func, impl.kernel)
    elif impl.kernel == "monte_carlo_pi":
        out = np.empty((2000, 2), np.float64)
        impl.func(99, out)
        check_monte_carlo_samples(out, "float64")
    else:
        assert check_implementation(host, impl.func, impl.kernel, sizes=(0, 1, 33)) > 0
