"""Bundled CuPy implementations (backend ``cupy``).

Four styles, each registered under its own name so the matrix shows them
apart: ``array`` (CuPy array expressions), ``elementwise``
(``cupy.ElementwiseKernel``), ``reduction`` (``cupy.ReductionKernel``) and
``raw`` (the CUDA C of :mod:`.cuda_c.sources` as a ``cupy.RawModule``, shared
with the cuda-python backend).  Importing this module imports no CuPy: every
kernel object is built by a cached factory on first use.

Never run here (no GPU in CI's CPU tier); :mod:`tests.test_bundled_gpu_impls`
runs them where CuPy probes available.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

from .cuda_c import drivers
from .cuda_c.sources import group_of, render

BACKEND = "cupy"
#: Raw kernels are compiled without FMA contraction, so that ``u + a * d``
#: rounds twice as in NumPy (see :mod:`.cuda_c.sources`).
RAW_OPTIONS = ("--fmad=false",)


def _cupy() -> Any:
    import cupy  # type: ignore[import-not-found, unused-ignore]

    return cupy


# -- array ----------------------------------------------------------------------------------
@implements("vector_add", backend=BACKEND, name="array", origin="bundled")
def vector_add_array(a: Any, b: Any, out: Any) -> None:
    """``out = a + b`` with ``cupy.add``."""
    _cupy().add(a, b, out=out)


@implements("saxpy", backend=BACKEND, name="array", origin="bundled")
def saxpy_array(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``out = alpha * x + y``: multiply and add are separate kernels (two roundings)."""
    cp = _cupy()
    cp.add(cp.multiply(x.dtype.type(alpha), x), y, out=out)


@implements("sigmoid", backend=BACKEND, name="array", origin="bundled")
def sigmoid_array(x: Any, out: Any) -> None:
    """``out = 1 / (1 + exp(-x))``."""
    cp = _cupy()
    one = x.dtype.type(1)
    cp.divide(one, one + cp.exp(-x), out=out)


@implements("add_one_2d", backend=BACKEND, name="array", origin="bundled")
def add_one_2d_array(a: Any) -> None:
    """``a += 1`` in place."""
    a += a.dtype.type(1)


@implements("transpose", backend=BACKEND, name="array", origin="bundled")
def transpose_array(a: Any, out: Any) -> None:
    """``out = a.T`` (CuPy copies the transposed view elementwise)."""
    out[...] = a.T


@implements("sum", backend=BACKEND, name="array", origin="bundled")
def sum_array(x: Any, out: Any) -> None:
    """``out[0] = sum(x)`` accumulated in ``x``'s dtype."""
    out[...] = _cupy().sum(x, dtype=x.dtype)


@implements("dot", backend=BACKEND, name="array", origin="bundled")
def dot_array(x: Any, y: Any, out: Any) -> None:
    """``out[0] = x . y`` with ``cupy.dot`` (cuBLAS for floats)."""
    out[...] = _cupy().dot(x, y)


@implements("max", backend=BACKEND, name="array", origin="bundled")
def max_array(x: Any, out: Any) -> None:
    """``out[0] = max(x)``."""
    out[...] = _cupy().max(x)


@implements("weighted_sum", backend=BACKEND, name="array", origin="bundled")
def weighted_sum_array(x: Any, w: Any, out: Any) -> None:
    """``out[0] = sum(w * x)``."""
    out[...] = _cupy().sum(w * x, dtype=out.dtype)


@implements("sum_of_squares", backend=BACKEND, name="array", origin="bundled")
def sum_of_squares_array(x: Any, out: Any) -> None:
    """``out[0] = sum(x * x)``."""
    out[...] = _cupy().sum(x * x, dtype=out.dtype)


@implements("histogram", backend=BACKEND, name="array", origin="bundled")
def histogram_array(x: Any, out: Any) -> None:
    """``out[v] += count of v in x`` with ``cupy.bincount``; values outside ``[0, len(out))``
    go to an extra bin that is dropped (``bincount`` refuses negative values, and a
    ``where`` keeps the shape fixed, unlike a boolean mask, which would synchronise)."""
    cp = _cupy()
    nbins = out.shape[0]
    inside = (x >= 0) & (x < nbins)
    counts = cp.bincount(cp.where(inside, x, nbins), minlength=nbins + 1)
    out += counts[:nbins].astype(out.dtype)


@implements("monte_carlo_pi", backend=BACKEND, name="array", origin="bundled")
def monte_carlo_pi_array(seed: int, out: Any) -> None:
    """``out[i] = (u, v)`` from one seeded cuRAND generator (CuPy maps its (0, 1] to [0, 1))."""
    cp = _cupy()
    state = cp.random.RandomState(int(seed))
    out[...] = state.random_sample(out.shape, dtype=out.dtype)


@implements("heat_step_1d", backend=BACKEND, name="array", origin="bundled")
def heat_step_1d_array(u: Any, alpha: Any, out: Any) -> None:
    """One explicit heat step from ``u`` into ``out``, walls held at 0."""
    _heat_step(u, u.dtype.type(alpha), out)


def _heat_step(u: Any, alpha: Any, out: Any) -> None:
    n = u.shape[0]
    if n > 2:
        centre = u[1:-1]
        out[1:-1] = centre + alpha * (u[:-2] - u.dtype.type(2) * centre + u[2:])
    out[: min(n, 1)] = 0
    out[max(n - 1, 0):] = 0


@implements("heat_steps_1d", backend=BACKEND, name="array", origin="bundled")
def heat_steps_1d_array(u: Any, alpha: Any, steps: int, out: Any) -> None:
    """``steps`` heat steps; intermediate states live in two scratch arrays."""
    cp = _cupy()
    alpha = u.dtype.type(alpha)
    if steps == 0:
        out[...] = u
        return
    scratch = [cp.empty_like(u) for _ in range(min(steps - 1, 2))]
    src = u
    for step in range(steps):
        dst = out if step == steps - 1 else scratch[step % 2]
        _heat_step(src, alpha, dst)
        src = dst


@implements("laplacian_2d", backend=BACKEND, name="array", origin="bundled")
def laplacian_2d_array(u: Any, out: Any) -> None:
    """Five-point Laplacian on the interior, 0 on the boundary."""
    out[...] = 0
    if u.shape[0] > 2 and u.shape[1] > 2:
        out[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                           - u.dtype.type(4) * u[1:-1, 1:-1])


def _halo_axis(a: Any, width: int, axis: int) -> None:
    # Explicit bounds: a[-0:] would be the whole axis.  With n >= 3w the source
    # and destination of each copy do not overlap.
    n = a.shape[axis]
    lead = (slice(None),) * axis
    # Index tuples are built first: a starred subscript needs Python >= 3.11.
    low_ghost, low_source = (*lead, slice(0, width)), (*lead, slice(n - 2 * width, n - width))
    high_ghost, high_source = (*lead, slice(n - width, n)), (*lead, slice(width, 2 * width))
    a[low_ghost] = a[low_source]
    a[high_ghost] = a[high_source]


@implements("halo_exchange_1d", backend=BACKEND, name="array", origin="bundled")
def halo_exchange_1d_array(a: Any, width: int) -> None:
    """Periodic ghost cells in place."""
    if width:
        _halo_axis(a, width, 0)


@implements("halo_exchange_2d", backend=BACKEND, name="array", origin="bundled")
def halo_exchange_2d_array(a: Any, width: int) -> None:
    """Periodic ghost cells on both axes; axis 1 after axis 0 fills the corners."""
    if width:
        _halo_axis(a, width, 0)
        _halo_axis(a, width, 1)


@implements("matmul", backend=BACKEND, name="array", origin="bundled")
def matmul_array(a: Any, b: Any, out: Any) -> None:
    """``out = a @ b`` with ``cupy.matmul``."""
    out[...] = _cupy().matmul(a, b)


# -- ElementwiseKernel -------------------------------------------------------------------------
# __fmul_rn/__dmul_rn are never contracted into an FMA, so saxpy rounds twice like NumPy.
_MUL_RN = """
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
"""


@functools.cache
def _elementwise(kernel: str) -> Any:
    cp = _cupy()
    if kernel == "vector_add":
        return cp.ElementwiseKernel("T a, T b", "T z", "z = a + b", "gpucheck_vector_add")
    if kernel == "saxpy":
        return cp.ElementwiseKernel("T alpha, T x, T y", "T z", "z = mul_rn(alpha, x) + y",
                                    "gpucheck_saxpy", preamble=_MUL_RN)
    if kernel == "sigmoid":
        return cp.ElementwiseKernel("T x", "T z", "z = (T)1 / ((T)1 + exp(-x))",
                                    "gpucheck_sigmoid")
    raise KeyError(kernel)


@implements("vector_add", backend=BACKEND, name="elementwise", origin="bundled")
def vector_add_elementwise(a: Any, b: Any, out: Any) -> None:
    """``out = a + b`` as a ``cupy.ElementwiseKernel``."""
    _elementwise("vector_add")(a, b, out)


@implements("saxpy", backend=BACKEND, name="elementwise", origin="bundled")
def saxpy_elementwise(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``out = alpha * x + y`` as a ``cupy.ElementwiseKernel`` (no FMA)."""
    _elementwise("saxpy")(x.dtype.type(alpha), x, y, out)


@implements("sigmoid", backend=BACKEND, name="elementwise", origin="bundled")
def sigmoid_elementwise(x: Any, out: Any) -> None:
    """``out = 1 / (1 + exp(-x))`` as a ``cupy.ElementwiseKernel``."""
    _elementwise("sigmoid")(x, out)


# -- ReductionKernel ---------------------------------------------------------------------------
#: -inf for floats, the minimum for integers: the identity of max, as C expressions.
_LOWEST = {
    "float32": "-__int_as_float(0x7f800000)",
    "float64": "-__longlong_as_double(0x7ff0000000000000LL)",
    "int32": "(-2147483647 - 1)",
    "int64": "(-9223372036854775807LL - 1)",
}


@functools.cache
def _reduction(kernel: str, dtype_name: str) -> Any:
    cp = _cupy()
    sums = {
        "sum": ("T x", "x"),
        "dot": ("T x, T y", "x * y"),
        "sum_of_squares": ("T x", "x * x"),
        "weighted_sum": ("T x, T w", "w * x"),
    }
    if kernel in sums:
        params, mapped = sums[kernel]
        # a and b are the reduction's own operands: no parameter may use those names.
        return cp.ReductionKernel(params, "T result", mapped, "a + b", "result = a", "0",
                                  f"gpucheck_{kernel}")
    if kernel == "max":
        # NaN wins, as in NumPy: (a != a) keeps a NaN already reduced.
        return cp.ReductionKernel("T x", "T result", "x", "(a != a || a > b) ? a : b",
                                  "result = a",
                                  _LOWEST[dtype_name], "gpucheck_max")
    raise KeyError(kernel)


def _reduce_into(kernel: str, out: Any, *inputs: Any) -> None:
    # A full reduction returns a 0-d array; out has shape (1,).
    out[...] = _reduction(kernel, np.dtype(out.dtype).name)(*inputs)


@implements("sum", backend=BACKEND, name="reduction", origin="bundled")
def sum_reduction(x: Any, out: Any) -> None:
    """``out[0] = sum(x)`` as a ``cupy.ReductionKernel``."""
    _reduce_into("sum", out, x)


@implements("dot", backend=BACKEND, name="reduction", origin="bundled")
def dot_reduction(x: Any, y: Any, out: Any) -> None:
    """``out[0] = sum(x * y)`` as a ``cupy.ReductionKernel``."""
    _reduce_into("dot", out, x, y)


@implements("sum_of_squares", backend=BACKEND, name="reduction", origin="bundled")
def sum_of_squares_reduction(x: Any, out: Any) -> None:
    """``out[0] = sum(x * x)`` as a ``cupy.ReductionKernel``."""
    _reduce_into("sum_of_squares", out, x)


@implements("weighted_sum", backend=BACKEND, name="reduction", origin="bundled")
def weighted_sum_reduction(x: Any, w: Any, out: Any) -> None:
    """``out[0] = sum(w * x)`` as a ``cupy.ReductionKernel``."""
    _reduce_into("weighted_sum", out, x, w)


@implements("max", backend=BACKEND, name="reduction", origin="bundled")
def max_reduction(x: Any, out: Any) -> None:
    """``out[0] = max(x)`` as a ``cupy.ReductionKernel`` (identity -inf / the minimum)."""
    _reduce_into("max", out, x)


# -- RawModule (shared CUDA C) -----------------------------------------------------------------
@functools.cache
def _raw_module(group: str, dtype_name: str, value_dtype_name: str, device_id: int) -> Any:
    cp = _cupy()
    with cp.cuda.Device(device_id):
        return cp.RawModule(code=render(group, dtype_name, value_dtype_name),
                            options=RAW_OPTIONS)


class CupyLauncher(drivers.Launcher):
    """Runs the raw kernels of :mod:`.cuda_c.drivers` with CuPy on one device."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id

    @classmethod
    def for_array(cls, array: Any) -> CupyLauncher:
        """A launcher on the device that holds ``array``."""
        return cls(int(array.device.id))

    def arg(self, array: Any) -> Any:
        # CuPy passes an ndarray to a RawKernel as the pointer to its first element.
        return array

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        cp = _cupy()
        with cp.cuda.Device(self.device_id):
            return cp.empty(shape, dtype=dtype)

    def run(self, kernel: str, types: tuple[str, str], grid: tuple[int, ...],
            block: tuple[int, ...], args: tuple[Any, ...]) -> None:
        module = _raw_module(group_of(kernel), *types, self.device_id)
        with _cupy().cuda.Device(self.device_id):
            module.get_function(kernel)(grid, block, args)


def _run(array: Any) -> CupyLauncher:
    return CupyLauncher.for_array(array)


#: The kernels CuPy also runs as raw CUDA C (name ``raw``), each by its driver in
#: .cuda_c.drivers.
RAW_KERNELS = ("add_one_2d", "index_map_1d", "index_map_2d", "index_map_3d",
               "index_map_grid_stride", "transpose", "histogram", "monte_carlo_pi",
               "heat_step_1d", "heat_steps_1d", "laplacian_2d", "halo_exchange_1d",
               "halo_exchange_2d", "matmul_tiled")
# The launcher is looked up at each call (the host tests swap this module's _run).
drivers.implement_by_drivers(RAW_KERNELS, backend=BACKEND, name="raw", module=__name__,
                             launcher_for=lambda array: _run(array), suffix="_raw")
