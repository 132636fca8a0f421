"""Every bundled ``@cuda.jit`` kernel compiles for the real CUDA target, without a GPU.

The simulator runs the kernels' Python semantics but never types or lowers
them; ``numba.cuda.compile_ptx`` does both (Numba's CUDA type inference, then
NVVM to PTX) and needs no driver or device.  Each kernel is compiled for
every dtype of its contract with general (``A``-layout) arrays, as a strided
or transposed argument arrives, so typing errors that only a GPU run would
otherwise reveal (a float64 literal promoting a float32 kernel, an atomic on
an unsupported type, a non-constant shared-array shape) fail here.

Not covered: the ``monte_carlo_pi`` kernel, which calls Numba's
``xoroshiro128p`` device functions; Numba compiles a called device function
for the current device, which needs a driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.slow

NUMERIC = ("float32", "float64", "int32", "int64")
FLOATS = ("float32", "float64")
INTEGERS = ("int32", "int64")
#: Compute capability compiled for: any CUDA 12/13 toolkit targets it.
CC = (8, 0)

# Imported while collecting, not first inside a test: pytester's in-process
# runs elsewhere in this suite unload the modules first imported during a run,
# and numba.cuda cannot register its CUDA target twice in one process.
pytest.importorskip("numba.cuda")


def _cuda_for_ptx() -> Any:
    """``numba.cuda`` for the real target, or skip (the simulator cannot compile PTX)."""
    numba = pytest.importorskip("numba")
    if getattr(numba.config, "ENABLE_CUDASIM", 0):
        pytest.skip("numba.cuda is the simulator in this process")
    from numba import cuda

    return cuda


def _cases() -> Iterator[tuple[str, str, Any]]:
    """(kernel name, dtype, a function taking the kernel module and returning (py_func, args))."""
    def a(dtype: str, ndim: int) -> Any:
        import numba

        return numba.types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "A")

    def s(dtype: str) -> Any:
        import numba

        return numba.from_dtype(np.dtype(dtype))

    def i64() -> Any:
        import numba

        return numba.types.int64

    for dt in NUMERIC:
        yield "vector_add", dt, lambda k, dt=dt: (k.vector_add, (a(dt, 1), a(dt, 1), a(dt, 1)))
        yield "add_one_2d", dt, lambda k, dt=dt: (k.add_one_2d, (a(dt, 2), s(dt)))
        yield "copy_1d", dt, lambda k, dt=dt: (k.copy_1d, (a(dt, 1), a(dt, 1)))
        yield "transpose", dt, lambda k, dt=dt: (k.transpose, (a(dt, 2), a(dt, 2)))
        yield "halo_exchange_1d", dt, lambda k, dt=dt: (k.halo_exchange_1d, (a(dt, 1), i64()))
        yield "halo_exchange_2d", dt, lambda k, dt=dt: (k.halo_exchange_2d, (a(dt, 2), i64()))
        yield "matmul", dt, lambda k, dt=dt: (k.matmul, (a(dt, 2), a(dt, 2), s(dt), a(dt, 2)))
        yield "matmul_tiled", dt, lambda k, dt=dt: (
            k.matmul_tiled(16, dt), (a(dt, 2), a(dt, 2), s(dt), a(dt, 2)))
        for term, name in ((0, "sum"), (1, "dot"), (2, "sum_of_squares")):
            yield name, dt, lambda k, dt=dt, term=term: (
                k.block_reduction(term, False, dt, k.OWN_BLOCK),
                (a(dt, 1), a(dt, 1), s(dt), a(dt, 1)))
        yield "max", dt, lambda k, dt=dt: (
            k.block_reduction(0, True, dt, k.OWN_BLOCK), (a(dt, 1), a(dt, 1), s(dt), a(dt, 1)))
    for dt in FLOATS:
        yield "saxpy", dt, lambda k, dt=dt: (k.saxpy, (s(dt), a(dt, 1), a(dt, 1), a(dt, 1)))
        yield "sigmoid", dt, lambda k, dt=dt: (k.sigmoid, (a(dt, 1), s(dt), a(dt, 1)))
        yield "heat_step_1d", dt, lambda k, dt=dt: (k.heat_step_1d, (a(dt, 1), s(dt), a(dt, 1)))
        yield "laplacian_2d", dt, lambda k, dt=dt: (k.laplacian_2d, (a(dt, 2), a(dt, 2)))
    for dt in INTEGERS:
        yield "histogram", dt, lambda k, dt=dt: (k.histogram, (a(dt, 1), a(dt, 1)))
        yield "index_map_1d", dt, lambda k, dt=dt: (k.index_map_1d, (a(dt, 1),))
        yield "index_map_2d", dt, lambda k, dt=dt: (k.index_map_2d, (a(dt, 2),))
        yield "index_map_3d", dt, lambda k, dt=dt: (k.index_map_3d, (a(dt, 3),))
        yield "index_map_grid_stride", dt, lambda k, dt=dt: (k.index_map_grid_stride, (a(dt, 1),))


CASES = [pytest.param(build, dtype, id=f"{name}-{dtype}") for name, dtype, build in _cases()]


def double_precision_ops(ptx: str) -> set[str]:
    """The float64 instructions in ``ptx`` (``add.f64``, ``cvt.f64.f32``, ``rcp.rn.f64``...)."""
    return set(re.findall(r"\b[a-z]+(?:\.[a-z0-9]+)*\.f64\b", ptx))


@pytest.mark.parametrize(("build", "dtype"), CASES)
def test_kernel_compiles_to_ptx(build: Any, dtype: str) -> None:
    """Type inference and NVVM lowering succeed; the PTX defines one kernel entry; a
    float32 kernel runs no float64 instruction (consumer GPUs run those at 1/32 speed,
    and the contract says float32 kernels compute in float32)."""
    cuda = _cuda_for_ptx()
    import numba

    from pytest_gpucheck.conformance.implementations.numba_cuda_impls import kernels

    kernel, args = build(kernels())
    try:
        ptx, _ = cuda.compile_ptx(kernel.py_func, numba.void(*args), cc=CC)
    except Exception as exc:  # NVVM missing is an environment problem, not a kernel bug
        if "NVVM" in str(exc) and "not found" in str(exc).lower():
            pytest.skip(f"libNVVM is not available: {exc}")
        raise
    assert ptx.count(".entry ") == 1
    if dtype == "float32":
        assert double_precision_ops(ptx) == set()


def test_a_float64_literal_in_a_float32_kernel_is_caught() -> None:
    """The float32 check can fail: a kernel that promotes float32 through a float64
    literal runs double-precision instructions."""
    cuda = _cuda_for_ptx()
    import numba

    def promoting(x: Any, out: Any) -> None:
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = 1.0 / (1.0 + x[i])  # 1.0 is float64: the division runs in double

    f32 = numba.types.Array(numba.float32, 1, "A")
    ptx, _ = cuda.compile_ptx(promoting, numba.void(f32, f32), cc=CC)
    assert {"add.f64", "rcp.rn.f64"} <= double_precision_ops(ptx)


@pytest.mark.parametrize("case", ["oob-read-in-slack", "shared-race-reduction",
                                  "uninitialised-global-read", "syncthreads-in-branch"])
def test_planted_sanitizer_kernels_compile_to_ptx(case: str) -> None:
    """The planted-bug kernels of ``conformance/sanitizer_planted.py`` (bug and twin are one
    kernel with a flag) type and lower for the real target; the bugs' barriers and shared
    arrays are in the PTX."""
    cuda = _cuda_for_ptx()
    import numba

    from pytest_gpucheck.conformance import sanitizer_planted

    kernel = sanitizer_planted._numba_kernels()[(case, True)]
    f32 = numba.types.Array(numba.float32, 1, "A")
    args = ((f32, numba.boolean) if case == "syncthreads-in-branch"
            else (f32, f32, numba.int64, numba.boolean))
    ptx, _ = cuda.compile_ptx(kernel.py_func, numba.void(*args), cc=CC)
    assert ".visible .entry" in ptx
    if case in ("shared-race-reduction", "syncthreads-in-branch"):
        assert "bar.sync" in ptx or "barrier.sync" in ptx, ptx[-2000:]
    if case == "shared-race-reduction":
        assert ".shared" in ptx
