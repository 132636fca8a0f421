"""Host side of the raw CUDA kernels: grids, scratch buffers and argument lists.

Written once for every framework that can launch the CUDA C in
:mod:`.sources`: a framework supplies a :class:`Launcher` (how an array is
passed, how scratch memory is allocated, how a kernel is compiled and
launched) and each driver here turns a kernel's contract arguments into
launches.  (``sum_`` and ``max_`` carry a trailing underscore so as not to shadow the
builtins.)  Arrays only need ``shape``, ``dtype`` and ``strides`` (bytes;
``None`` means C-contiguous), which both ``cupy.ndarray`` and the cuda-python
backend's ``DeviceArray`` have.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.registry import implements

from .sources import REDUCE_BLOCK, TILE

#: Threads per block of the grid-stride kernels (which handle any grid).
LINEAR_BLOCK = 256
#: Upper bound on the blocks of a grid-stride launch: enough to fill a GPU,
#: few enough that each thread of a large input loops.
MAX_LINEAR_GRID = 4096


class Launcher(ABC):
    """What a framework provides so that the drivers can run the raw kernels: how an
    array is passed (:meth:`arg`), scratch memory (:meth:`empty`) and how a kernel
    compiled for named element types is launched (:meth:`run`).  The drivers call
    :meth:`launch`, declared here once for every framework."""

    @abstractmethod
    def arg(self, array: Any) -> Any:
        """The kernel argument that passes ``array``'s first element as a pointer."""

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A C-contiguous scratch device array on the device of the current call."""

    @abstractmethod
    def run(self, kernel: str, types: tuple[str, str], grid: tuple[int, ...],
            block: tuple[int, ...], args: tuple[Any, ...]) -> None:
        """Compile (cached) ``kernel`` for ``types`` (the names of the element dtype and
        of the value dtype) and launch it on ``grid`` x ``block`` with ``args``."""

    def launch(
        self,
        kernel: str,
        dtype: np.dtype,
        grid: tuple[int, ...],
        block: tuple[int, ...],
        args: Sequence[Any],
        *,
        value_dtype: np.dtype | None = None,
    ) -> None:
        """Compile (cached) and launch ``kernel`` for element type ``dtype`` (and
        ``value_dtype``, the dtype of the values a kernel such as ``histogram`` reads,
        when it differs)."""
        dtype_name = np.dtype(dtype).name
        value_name = np.dtype(value_dtype).name if value_dtype is not None else dtype_name
        self.run(kernel, (dtype_name, value_name), tuple(grid), tuple(block), tuple(args))


def element_strides(array: Any) -> tuple[int, ...]:
    """Strides of ``array`` in elements (C-contiguous when its ``strides`` is None)."""
    itemsize = np.dtype(array.dtype).itemsize
    strides = getattr(array, "strides", None)
    if strides is None:
        return tuple(s // itemsize for s in np.empty(array.shape, dtype=array.dtype).strides)
    for stride in strides:
        if stride % itemsize:
            raise ValueError(f"stride {stride} bytes is not a multiple of the {itemsize}-byte "
                             "element; the raw kernels index in elements")
    return tuple(int(s) // itemsize for s in strides)


def _i64(*values: int) -> list[np.int64]:
    return [np.int64(v) for v in values]


def _same_dtype(*arrays: Any) -> np.dtype:
    dtypes = {np.dtype(a.dtype) for a in arrays}
    if len(dtypes) != 1:
        names = sorted(map(str, dtypes))
        raise ValueError(f"the raw kernels need one dtype for all arrays, got {names}")
    return dtypes.pop()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _linear_grid(n: int) -> tuple[int]:
    """A 1-D grid for a grid-stride kernel over ``n`` elements (at least one block)."""
    return (max(1, min(_cdiv(n, LINEAR_BLOCK), MAX_LINEAR_GRID)),)


def _tile_grid(rows: int, cols: int) -> tuple[int, int]:
    """A 2-D grid of TILE x TILE blocks covering a rows x cols array (x along columns)."""
    return (_cdiv(cols, TILE), _cdiv(rows, TILE))


# -- elementwise ---------------------------------------------------------------------
def vector_add(run: Launcher, a: Any, b: Any, out: Any) -> None:
    """``out = a + b`` (1-D)."""
    dtype = _same_dtype(a, b, out)
    (n,) = out.shape
    args = [run.arg(a), run.arg(b), run.arg(out), *_i64(n, *element_strides(a),
                                                         *element_strides(b),
                                                         *element_strides(out))]
    run.launch("vector_add", dtype, _linear_grid(n), (LINEAR_BLOCK,), args)


def saxpy(run: Launcher, alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``out = alpha * x + y`` with ``alpha`` converted to the arrays' dtype."""
    dtype = _same_dtype(x, y, out)
    (n,) = out.shape
    args = [dtype.type(alpha), run.arg(x), run.arg(y), run.arg(out),
            *_i64(n, *element_strides(x), *element_strides(y), *element_strides(out))]
    run.launch("saxpy", dtype, _linear_grid(n), (LINEAR_BLOCK,), args)


def sigmoid(run: Launcher, x: Any, out: Any) -> None:
    """``out = 1 / (1 + exp(-x))``."""
    dtype = _same_dtype(x, out)
    (n,) = out.shape
    args = [run.arg(x), run.arg(out), *_i64(n, *element_strides(x), *element_strides(out))]
    run.launch("sigmoid", dtype, _linear_grid(n), (LINEAR_BLOCK,), args)


def add_one_2d(run: Launcher, a: Any) -> None:
    """``a += 1`` in place on a 2-D array."""
    rows, cols = a.shape
    if rows == 0 or cols == 0:
        return
    args = [run.arg(a), *_i64(rows, cols, *element_strides(a))]
    run.launch("add_one_2d", np.dtype(a.dtype), _tile_grid(rows, cols), (TILE, TILE), args)


# -- indexing (the caller's launch configuration) ----------------------------------------
def index_map_1d(run: Launcher, out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` by the thread with global x index ``i``."""
    (n,) = out.shape
    args = [run.arg(out), *_i64(n, *element_strides(out))]
    run.launch("index_map_1d", np.dtype(out.dtype), launch.grid, launch.block, args)


def index_map_2d(run: Launcher, out: Any, launch: LaunchConfig) -> None:
    """``out[r, c] = r * cols + c`` by thread (x=c, y=r)."""
    rows, cols = out.shape
    args = [run.arg(out), *_i64(rows, cols, *element_strides(out))]
    run.launch("index_map_2d", np.dtype(out.dtype), launch.grid, launch.block, args)


def index_map_3d(run: Launcher, out: Any, launch: LaunchConfig) -> None:
    """``out[z, y, x] = (z * ny + y) * nx + x`` by thread (x, y, z)."""
    nz, ny, nx = out.shape
    args = [run.arg(out), *_i64(nz, ny, nx, *element_strides(out))]
    run.launch("index_map_3d", np.dtype(out.dtype), launch.grid, launch.block, args)


def index_map_grid_stride(run: Launcher, out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` with a grid-stride loop over the caller's (small) grid."""
    (n,) = out.shape
    args = [run.arg(out), *_i64(n, *element_strides(out))]
    run.launch("index_map_grid_stride", np.dtype(out.dtype), launch.grid, launch.block, args)


def transpose(run: Launcher, a: Any, out: Any) -> None:
    """``out = a.T`` through shared-memory tiles."""
    _tiled(run, "transpose", a, out)


def _tiled(run: Launcher, kernel: str, source: Any, out: Any) -> None:
    """One launch of a tiled 2-D kernel that reads ``source`` and writes ``out``."""
    dtype = _same_dtype(source, out)
    rows, cols = source.shape
    if rows == 0 or cols == 0:
        return
    args = [run.arg(source), run.arg(out), *_i64(rows, cols, *element_strides(source),
                                                 *element_strides(out))]
    run.launch(kernel, dtype, _tile_grid(rows, cols), (TILE, TILE), args)


# -- reductions ----------------------------------------------------------------------------
def _reduce_grid(n: int) -> tuple[int]:
    # At most REDUCE_BLOCK blocks: max_final reduces one partial per thread of one block.
    return (max(1, min(_cdiv(n, REDUCE_BLOCK), REDUCE_BLOCK)),)


def _sum_like(run: Launcher, kernel: str, inputs: Sequence[Any], out: Any) -> None:
    dtype = _same_dtype(*inputs, out)
    (n,) = inputs[0].shape
    strides = [s for x in inputs for s in element_strides(x)]
    args = [*(run.arg(x) for x in inputs), run.arg(out), *_i64(n, *strides)]
    run.launch(kernel, dtype, _reduce_grid(n), (REDUCE_BLOCK,), args)


def sum_(run: Launcher, x: Any, out: Any) -> None:
    """``out[0] += sum(x)`` (``out`` preset to 0): block partials, one atomic per block."""
    _sum_like(run, "sum", [x], out)


def dot(run: Launcher, x: Any, y: Any, out: Any) -> None:
    """``out[0] += sum(x * y)``."""
    _sum_like(run, "dot", [x, y], out)


def weighted_sum(run: Launcher, x: Any, w: Any, out: Any) -> None:
    """``out[0] += sum(w * x)``."""
    _sum_like(run, "weighted_sum", [x, w], out)


def sum_of_squares(run: Launcher, x: Any, out: Any) -> None:
    """``out[0] += sum(x * x)``."""
    _sum_like(run, "sum_of_squares", [x], out)


def max_(run: Launcher, x: Any, out: Any) -> None:
    """``out[0] = max(x)`` in two passes (block maxima to scratch, then one block)."""
    dtype = _same_dtype(x, out)
    (n,) = x.shape
    if n == 0:
        raise ValueError("max is defined for a non-empty x only")
    grid = _reduce_grid(n)
    partials = run.empty(grid, dtype)
    run.launch("max_partials", dtype, grid, (REDUCE_BLOCK,),
               [run.arg(x), run.arg(partials), *_i64(n, *element_strides(x))])
    run.launch("max_final", dtype, (1,), (REDUCE_BLOCK,),
               [run.arg(partials), run.arg(out), *_i64(grid[0])])


def histogram(run: Launcher, x: Any, out: Any) -> None:
    """``out[v] += 1`` for each ``v`` in ``x`` with atomics (counts in ``out``'s dtype)."""
    (n,) = x.shape
    (nbins,) = out.shape
    args = [run.arg(x), run.arg(out), *_i64(n, *element_strides(x), nbins,
                                            *element_strides(out))]
    run.launch("histogram", np.dtype(out.dtype), _linear_grid(n), (LINEAR_BLOCK,), args,
               value_dtype=np.dtype(x.dtype))


def monte_carlo_pi(run: Launcher, seed: int, out: Any) -> None:
    """``out[i] = (u, v)``: samples ``2i`` and ``2i + 1`` of a counter-based stream of ``seed``."""
    n, two = out.shape
    if two != 2:
        raise ValueError(f"monte_carlo_pi writes an (n, 2) array, got shape {out.shape}")
    args = [np.uint64(int(seed) % 2**64), run.arg(out), *_i64(n, *element_strides(out))]
    run.launch("monte_carlo_pi", np.dtype(out.dtype), _linear_grid(n), (LINEAR_BLOCK,), args)


# -- stencils and halos ----------------------------------------------------------------------
def _heat_step(run: Launcher, src: Any, alpha: Any, dst: Any, dtype: np.dtype) -> None:
    (n,) = src.shape
    args = [run.arg(src), dtype.type(alpha), run.arg(dst),
            *_i64(n, *element_strides(src), *element_strides(dst))]
    run.launch("heat_step_1d", dtype, _linear_grid(n), (LINEAR_BLOCK,), args)


def heat_step_1d(run: Launcher, u: Any, alpha: Any, out: Any) -> None:
    """One explicit heat step from ``u`` into ``out``, walls at 0."""
    _heat_step(run, u, alpha, out, _same_dtype(u, out))


def heat_steps_1d(run: Launcher, u: Any, alpha: Any, steps: int, out: Any) -> None:
    """``steps`` heat steps, ping-ponging between two scratch arrays; the last writes ``out``."""
    dtype = _same_dtype(u, out)
    (n,) = u.shape
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if steps == 0:
        run.launch("copy_1d", dtype, _linear_grid(n), (LINEAR_BLOCK,),
                   [run.arg(u), run.arg(out), *_i64(n, *element_strides(u),
                                                    *element_strides(out))])
        return
    scratch = [run.empty((n,), dtype) for _ in range(min(steps - 1, 2))]
    src = u
    for step in range(steps):
        dst = out if step == steps - 1 else scratch[step % 2]
        _heat_step(run, src, alpha, dst, dtype)
        src = dst


def laplacian_2d(run: Launcher, u: Any, out: Any) -> None:
    """Five-point Laplacian on the interior, 0 on the boundary."""
    _tiled(run, "laplacian_2d", u, out)


def _halo_axis(run: Launcher, a: Any, lines: int, n: int, width: int, s_line: int,
               s_elem: int) -> None:
    if n < 3 * width:
        raise ValueError(f"a periodic halo of width {width} needs at least {3 * width} cells "
                         f"per axis, got {n}")
    args = [run.arg(a), *_i64(lines, n, width, s_line, s_elem)]
    run.launch("halo_exchange_axis", np.dtype(a.dtype), _linear_grid(lines * width),
               (LINEAR_BLOCK,), args)


def halo_exchange_1d(run: Launcher, a: Any, width: int) -> None:
    """Periodic ghost cells of width ``width`` in place."""
    if width == 0:
        return
    (n,) = a.shape
    (stride,) = element_strides(a)
    _halo_axis(run, a, 1, n, width, 0, stride)


def halo_exchange_2d(run: Launcher, a: Any, width: int) -> None:
    """Periodic ghost cells on both axes: axis 0 first, then axis 1 over all rows (corners)."""
    if width == 0:
        return
    rows, cols = a.shape
    s0, s1 = element_strides(a)
    _halo_axis(run, a, cols, rows, width, s1, s0)
    _halo_axis(run, a, rows, cols, width, s0, s1)


# -- linalg -----------------------------------------------------------------------------------
def _matmul(run: Launcher, kernel: str, a: Any, b: Any, out: Any) -> None:
    dtype = _same_dtype(a, b, out)
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise ValueError(f"matmul needs (m, k) @ (k, n), got {a.shape} @ {b.shape}")
    if m == 0 or n == 0:
        return
    args = [run.arg(a), run.arg(b), run.arg(out),
            *_i64(m, k, n, *element_strides(a), *element_strides(b), *element_strides(out))]
    run.launch(kernel, dtype, _tile_grid(m, n), (TILE, TILE), args)


def matmul(run: Launcher, a: Any, b: Any, out: Any) -> None:
    """``out = a @ b``, one thread per output element."""
    _matmul(run, "matmul", a, b, out)


def matmul_tiled(run: Launcher, a: Any, b: Any, out: Any) -> None:
    """``out = a @ b`` staging TILE x TILE tiles of ``a`` and ``b`` in shared memory."""
    _matmul(run, "matmul_tiled", a, b, out)


# -- registration --------------------------------------------------------------------------
def driver_of(kernel: str) -> Callable[..., None]:
    """The driver of ``kernel`` (``sum_`` and ``max_`` for ``sum`` and ``max``)."""
    driver = globals().get(kernel) or globals()[f"{kernel}_"]
    return driver  # type: ignore[no-any-return]


def implement_by_drivers(kernels: Iterable[str], *, backend: str, name: str, module: str,
                         launcher_for: Callable[[Any], Launcher], suffix: str = "") -> None:
    """Register each of ``kernels`` on ``backend`` as its driver run by ``launcher_for(array)``
    (``array``: ``out``, or the argument an in-place kernel updates).

    The implementation takes the contract's arguments (the driver's after ``run``, so
    registration checks them as for a hand-written function) and is named as one
    written out in ``module`` would be: the driver's name plus ``suffix``.
    """
    for kernel in kernels:
        implementation = _driven(driver_of(kernel), launcher_for)
        implementation.__module__ = module
        implementation.__name__ = implementation.__qualname__ = driver_of(kernel).__name__ + suffix
        implements(kernel, backend=backend, name=name, origin="bundled")(implementation)


def _driven(driver: Callable[..., None],
            launcher_for: Callable[[Any], Launcher]) -> Callable[..., None]:
    signature = inspect.signature(driver)
    contract = signature.replace(parameters=list(signature.parameters.values())[1:])
    device_array = "out" if "out" in contract.parameters else next(iter(contract.parameters))

    def implementation(*args: Any, **kwargs: Any) -> None:
        bound = contract.bind(*args, **kwargs)
        driver(launcher_for(bound.arguments[device_array]), *bound.args, **bound.kwargs)

    implementation.__signature__ = contract  # type: ignore[attr-defined]
    implementation.__doc__ = driver.__doc__
    return implementation
