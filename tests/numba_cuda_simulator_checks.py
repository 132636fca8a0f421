"""The bundled ``@cuda.jit`` kernels on Numba's CUDA simulator, against the references.

Not collected by a plain ``pytest`` run (its name does not start with
``test_``): ``test_bundled_numba_impls.py::test_cuda_kernels_on_the_simulator``
runs this file in a child process with ``NUMBA_ENABLE_CUDASIM=1``, because
``numba.cuda`` picks the simulator or a GPU when it is first imported.

Each kernel that takes a launch gets one whose blocks are not a power of two
and whose grid has an extra block, so threads past the end of the data exist
(a missing bounds check writes a guard band, or raises ``IndexError`` in the
simulator); the grid-stride kernel gets a grid smaller than its data.  Inputs
are checked plain and as strided / transposed views.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from bundled_impl_checks import check_implementation, check_monte_carlo_samples

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.checking.guards import GuardedBuffer, poison_value
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.reference_kernels import indexing
from pytest_gpucheck.registry import implementations

BACKEND = "numba-cudasim"
#: Simulated threads are Python threads: small problems, small blocks.
SIZES = (0, 1, 7, 33)
BLOCK_1D = 5
BLOCK_2D = (3, 2)
BLOCK_3D = (3, 2, 2)


@pytest.fixture(scope="module")
def simulator() -> Any:
    """The numba-cudasim backend; this module only makes sense in a simulator process."""
    backend = get_backend(BACKEND)
    probe = backend.probe()
    if not probe.available or not _simulating():
        pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba.cuda is imported "
                    f"({probe.reason or 'numba.cuda is the real CUDA target here'})")
    return backend


def _simulating() -> bool:
    import numba

    return bool(getattr(numba.config, "ENABLE_CUDASIM", 0))


def _impls(takes_launch: bool | None = None) -> list[Any]:
    found = implementations(backend=BACKEND, origin="bundled")
    return [pytest.param(impl, id=impl.kernel)
            for impl in sorted(found, key=lambda impl: impl.kernel)
            if impl.func.__module__.endswith("numba_cuda_impls")
            and impl.kernel != "monte_carlo_pi" and not impl.kernel.startswith("index_map")
            and (takes_launch is None or impl.takes_launch == takes_launch)]


def covering_launch(shape: tuple[int, ...], *, square: bool = False) -> LaunchConfig:
    """A launch over ``shape`` (C order) with one block more than needed along each axis."""
    if square:
        block: tuple[int, ...] = (3, 3)
    else:
        block = {1: (BLOCK_1D,), 2: BLOCK_2D, 3: BLOCK_3D}[len(shape)]
    extents = tuple(reversed(shape))  # x first
    grid = tuple(math.ceil(e / b) + 1 for e, b in zip(extents, block, strict=True))
    return LaunchConfig(grid, block)


def with_launch(impl: Any) -> Callable[..., Any]:
    """``impl.func`` with a covering launch of its output (or in-place array) added."""
    if not impl.takes_launch:
        return impl.func  # type: ignore[no-any-return]

    @functools.wraps(impl.func)
    def call(**kwargs: Any) -> Any:
        target = kwargs["out"] if "out" in kwargs else kwargs["a"]  # in-place kernels: a
        launch = covering_launch(tuple(target.shape), square=impl.kernel == "matmul_tiled")
        return impl.func(**kwargs, launch=launch)

    return call


@pytest.mark.parametrize("impl", _impls())
def test_kernel_matches_reference(simulator: Any, impl: Any) -> None:
    """Every dtype and size (0, 1, 7, 33: a partial second block of 32), guards intact."""
    # The tiled kernel runs (block x tiles) barriers per output tile: 7 rows already
    # give partial tiles in every dimension (k is 17), at a fraction of the time.
    sizes = SIZES[:-1] if impl.kernel == "matmul_tiled" else SIZES
    assert check_implementation(simulator, with_launch(impl), impl.kernel, sizes=sizes) > 0


@pytest.mark.parametrize("impl", _impls())
def test_kernel_reads_strided_and_transposed_inputs(simulator: Any, impl: Any) -> None:
    """Strided 1-D and transposed 2-D inputs are read through their strides."""
    assert check_implementation(simulator, with_launch(impl), impl.kernel, strided=True,
                                sizes=(7,)) > 0


#: (shape, launch) per index map: blocks of 1, non-powers of two and a warp,
#: grids with spare blocks; the grid-stride grid has fewer threads than elements.
INDEX_MAP_LAUNCHES: dict[str, list[tuple[tuple[int, ...], LaunchConfig]]] = {
    "index_map_1d": [((13,), LaunchConfig((13,), (1,))), ((13,), LaunchConfig((3,), (5,))),
                     ((33,), LaunchConfig((2,), (32,)))],
    "index_map_2d": [((5, 7), LaunchConfig((3, 2), (3, 3))),
                     ((3, 7), LaunchConfig((1, 2), (8, 2)))],
    "index_map_3d": [((3, 4, 5), LaunchConfig((2, 2, 1), (3, 2, 3))),
                     ((2, 3, 1), LaunchConfig((1, 1, 2), (1, 3, 1)))],
    "index_map_grid_stride": [((33,), LaunchConfig((2,), (3,))),
                              ((13,), LaunchConfig((1,), (1,)))],
}


def check_index_map(simulator: Any, func: Callable[..., Any], kernel: str, dtype: str) -> None:
    """``func`` writes the reference index map on every launch of ``kernel``, inside ``out``."""
    for shape, launch in INDEX_MAP_LAUNCHES[kernel]:
        out = GuardedBuffer(simulator, "out", shape, dtype, poison_value(dtype))
        func(out.view, launch)
        readback = out.read()
        assert readback.ok, readback.describe()
        np.testing.assert_array_equal(readback.region, getattr(indexing, kernel)(shape, dtype),
                                      err_msg=str(launch))


@pytest.mark.parametrize("kernel", sorted(INDEX_MAP_LAUNCHES))
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_index_map(simulator: Any, kernel: str, dtype: str) -> None:
    """The thread with global index i writes element i, on each launch."""
    (impl,) = implementations(kernel=kernel, backend=BACKEND, origin="bundled")
    check_index_map(simulator, impl.func, kernel, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_monte_carlo_pi(simulator: Any, dtype: str) -> None:
    """Per-thread streams: samples in [0, 1)^2, no repeats, pi within 5 standard errors;
    the same seed gives the same samples and another seed different ones."""
    (impl,) = implementations(kernel="monte_carlo_pi", backend=BACKEND, origin="bundled")

    def draw(seed: int, n: int) -> np.ndarray:
        out = simulator.empty((n, 2), dtype)
        impl.func(seed, out)
        return np.asarray(simulator.to_host(out))

    check_monte_carlo_samples(draw(11, 1024), dtype)
    few = draw(11, 40)
    np.testing.assert_array_equal(draw(11, 40), few)
    assert not np.array_equal(draw(12, 40), few)


# -- the same checks reject broken kernels ----------------------------------------------------


@pytest.mark.parametrize("bug", ["missing bounds check", "x and y swapped",
                                 "reduction drops the partial block"])
def test_broken_kernel_is_rejected(simulator: Any, bug: str) -> None:
    """A kernel with the bug fails the checks the bundled kernels pass (the simulator
    raises IndexError for an access outside an array; the guards catch the rest)."""
    from broken_numba_cuda_kernels import BROKEN

    kernel, func = BROKEN[bug]

    def check() -> None:
        if kernel.startswith("index_map"):
            check_index_map(simulator, func, kernel, "int32")
        else:
            check_implementation(simulator, func, kernel, sizes=(1, 7, 33))

    with pytest.raises((AssertionError, IndexError)):
        check()


def test_threads_sharing_a_seed_are_rejected(simulator: Any) -> None:
    """Every thread seeded alike replays one stream: repeated samples are caught."""
    from numba import cuda
    from numba.cuda.random import create_xoroshiro128p_states

    from pytest_gpucheck.conformance.implementations.numba_cuda_impls import kernels

    threads, n = 32, 512
    one_state = create_xoroshiro128p_states(1, seed=7).copy_to_host()
    states = cuda.to_device(np.repeat(one_state, threads))  # the bug: one seed for all
    out = simulator.empty((n, 2), "float64")
    kernels().monte_carlo_kernel("float64")[1, threads](states, out)
    with pytest.raises(AssertionError, match="shared stream"):
        check_monte_carlo_samples(np.asarray(simulator.to_host(out)), "float64")
