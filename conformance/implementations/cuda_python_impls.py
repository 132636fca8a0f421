"""Bundled cuda-python implementations (backend ``cuda-python``).

The CUDA C of :mod:`.cuda_c.sources` (shared with CuPy's ``raw`` kernels) is
compiled to a cubin with NVRTC through ``cuda.core``
(``Program(code, "c++", ProgramOptions(arch=...)).compile("cubin")``), cached
per (source group, dtypes, architecture), and launched with
``cuda.core.launch`` on the backend's stream.  Arrays are the backend's
:class:`~pytest_gpucheck.backends.cuda_python.backend.DeviceArray`: pointers
go to the kernel as Python ints (``intptr_t``), sizes and strides as
``numpy.int64``; strides (bytes, ``None`` for C-contiguous) are honoured, so
strided and transposed views work.

Importing this module imports no ``cuda.core``.  Never run here (no GPU in
the CPU tier); :mod:`tests.test_bundled_gpu_impls` runs it where the backend
probes available.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.registry import implements

from .cuda_c import drivers
from .cuda_c.sources import group_of, render

BACKEND = "cuda-python"
NAME = "nvrtc"


def _core() -> Any:
    from pytest_gpucheck.backends.cuda_python.backend import _cuda_core

    return _cuda_core()


def program_options(group: str, dtype_name: str, value_dtype_name: str, arch: str) -> Any:
    """The ``cuda.core.ProgramOptions`` one source group is compiled with (the tests
    compile the same sources with the same options where no GPU is)."""
    # fma=False: no contraction of a * b + c, so the rounding matches NumPy's.
    return _core().ProgramOptions(arch=arch, fma=False,
                                  name=f"gpucheck_{group}_{dtype_name}_{value_dtype_name}")


@functools.cache
def _object_code(group: str, dtype_name: str, value_dtype_name: str, arch: str) -> Any:
    """The cubin of one source group for one set of types and one architecture."""
    program = _core().Program(render(group, dtype_name, value_dtype_name), code_type="c++",
                              options=program_options(group, dtype_name, value_dtype_name, arch))
    return program.compile("cubin")


@functools.cache
def _kernel(name: str, dtype_name: str, value_dtype_name: str, arch: str) -> Any:
    return _object_code(group_of(name), dtype_name, value_dtype_name, arch).get_kernel(name)


class CorePythonLauncher:
    """Runs the raw kernels of :mod:`.cuda_c.drivers` through ``cuda.core`` on one backend."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    @classmethod
    def for_array(cls, array: Any) -> CorePythonLauncher:
        """A launcher on the cuda-python backend of the device that holds ``array``."""
        from pytest_gpucheck.backends import get_backend

        return cls(get_backend(BACKEND, int(array.buffer.device_id)))

    @property
    def arch(self) -> str:
        capability = self.backend.device.compute_capability
        return f"sm_{capability.major}{capability.minor}"

    def arg(self, array: Any) -> Any:
        # A Python int is passed as intptr_t: the device address of the first element.
        return int(array.ptr)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.backend.empty(tuple(shape), dtype)

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
        core = _core()
        dtype_name = np.dtype(dtype).name
        value_name = np.dtype(value_dtype).name if value_dtype is not None else dtype_name
        compiled = _kernel(kernel, dtype_name, value_name, self.arch)
        config = core.LaunchConfig(grid=tuple(grid), block=tuple(block))
        core.launch(self.backend.stream, config, compiled, *args)


def _run(array: Any) -> CorePythonLauncher:
    return CorePythonLauncher.for_array(array)


@implements("vector_add", backend=BACKEND, name=NAME, origin="bundled")
def vector_add(a: Any, b: Any, out: Any) -> None:
    """``out = a + b`` (grid-stride)."""
    drivers.vector_add(_run(out), a, b, out)


@implements("saxpy", backend=BACKEND, name=NAME, origin="bundled")
def saxpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """``out = alpha * x + y`` (no FMA)."""
    drivers.saxpy(_run(out), alpha, x, y, out)


@implements("sigmoid", backend=BACKEND, name=NAME, origin="bundled")
def sigmoid(x: Any, out: Any) -> None:
    """``out = 1 / (1 + exp(-x))``."""
    drivers.sigmoid(_run(out), x, out)


@implements("add_one_2d", backend=BACKEND, name=NAME, origin="bundled")
def add_one_2d(a: Any) -> None:
    """``a += 1`` in place."""
    drivers.add_one_2d(_run(a), a)


@implements("index_map_1d", backend=BACKEND, name=NAME, origin="bundled")
def index_map_1d(out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` by the thread with global x index ``i``, on the given launch."""
    drivers.index_map_1d(_run(out), out, launch)


@implements("index_map_2d", backend=BACKEND, name=NAME, origin="bundled")
def index_map_2d(out: Any, launch: LaunchConfig) -> None:
    """``out[r, c] = r * cols + c`` by thread (x=c, y=r), on the given launch."""
    drivers.index_map_2d(_run(out), out, launch)


@implements("index_map_3d", backend=BACKEND, name=NAME, origin="bundled")
def index_map_3d(out: Any, launch: LaunchConfig) -> None:
    """``out[z, y, x]`` = its flat index, by thread (x, y, z), on the given launch."""
    drivers.index_map_3d(_run(out), out, launch)


@implements("index_map_grid_stride", backend=BACKEND, name=NAME, origin="bundled")
def index_map_grid_stride(out: Any, launch: LaunchConfig) -> None:
    """``out[i] = i`` with a grid-stride loop over the given (small) grid."""
    drivers.index_map_grid_stride(_run(out), out, launch)


@implements("transpose", backend=BACKEND, name=NAME, origin="bundled")
def transpose(a: Any, out: Any) -> None:
    """``out = a.T`` through shared-memory tiles."""
    drivers.transpose(_run(out), a, out)


@implements("sum", backend=BACKEND, name=NAME, origin="bundled")
def sum_(x: Any, out: Any) -> None:
    """``out[0] = sum(x)``: block partials in shared memory, one atomic add per block."""
    drivers.sum_(_run(out), x, out)


@implements("dot", backend=BACKEND, name=NAME, origin="bundled")
def dot(x: Any, y: Any, out: Any) -> None:
    """``out[0] = sum(x * y)``."""
    drivers.dot(_run(out), x, y, out)


@implements("max", backend=BACKEND, name=NAME, origin="bundled")
def max_(x: Any, out: Any) -> None:
    """``out[0] = max(x)`` in two passes."""
    drivers.max_(_run(out), x, out)


@implements("weighted_sum", backend=BACKEND, name=NAME, origin="bundled")
def weighted_sum(x: Any, w: Any, out: Any) -> None:
    """``out[0] = sum(w * x)``."""
    drivers.weighted_sum(_run(out), x, w, out)


@implements("sum_of_squares", backend=BACKEND, name=NAME, origin="bundled")
def sum_of_squares(x: Any, out: Any) -> None:
    """``out[0] = sum(x * x)``."""
    drivers.sum_of_squares(_run(out), x, out)


@implements("histogram", backend=BACKEND, name=NAME, origin="bundled")
def histogram(x: Any, out: Any) -> None:
    """``out[v] += 1`` per value with ``atomicAdd``."""
    drivers.histogram(_run(out), x, out)


@implements("monte_carlo_pi", backend=BACKEND, name=NAME, origin="bundled")
def monte_carlo_pi(seed: int, out: Any) -> None:
    """Samples from a counter-based generator: thread i owns samples 2i and 2i + 1."""
    drivers.monte_carlo_pi(_run(out), seed, out)


@implements("heat_step_1d", backend=BACKEND, name=NAME, origin="bundled")
def heat_step_1d(u: Any, alpha: Any, out: Any) -> None:
    """One explicit heat step, walls held at 0."""
    drivers.heat_step_1d(_run(out), u, alpha, out)


@implements("heat_steps_1d", backend=BACKEND, name=NAME, origin="bundled")
def heat_steps_1d(u: Any, alpha: Any, steps: int, out: Any) -> None:
    """``steps`` heat steps, one launch each, ping-ponging between scratch arrays."""
    drivers.heat_steps_1d(_run(out), u, alpha, steps, out)


@implements("laplacian_2d", backend=BACKEND, name=NAME, origin="bundled")
def laplacian_2d(u: Any, out: Any) -> None:
    """Five-point Laplacian on the interior, 0 on the boundary."""
    drivers.laplacian_2d(_run(out), u, out)


@implements("halo_exchange_1d", backend=BACKEND, name=NAME, origin="bundled")
def halo_exchange_1d(a: Any, width: int) -> None:
    """Periodic ghost cells in place."""
    drivers.halo_exchange_1d(_run(a), a, width)


@implements("halo_exchange_2d", backend=BACKEND, name=NAME, origin="bundled")
def halo_exchange_2d(a: Any, width: int) -> None:
    """Periodic ghost cells on both axes, corners included."""
    drivers.halo_exchange_2d(_run(a), a, width)


@implements("matmul", backend=BACKEND, name=NAME, origin="bundled")
def matmul(a: Any, b: Any, out: Any) -> None:
    """``out = a @ b``, one thread per output element."""
    drivers.matmul(_run(out), a, b, out)


@implements("matmul_tiled", backend=BACKEND, name=NAME, origin="bundled")
def matmul_tiled(a: Any, b: Any, out: Any) -> None:
    """``out = a @ b`` with shared-memory tiles."""
    drivers.matmul_tiled(_run(out), a, b, out)
