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
from typing import Any

import numpy as np

from pytest_gpucheck.reference_kernels import CORE_KERNELS

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


class CorePythonLauncher(drivers.Launcher):
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

    def run(self, kernel: str, types: tuple[str, str], grid: tuple[int, ...],
            block: tuple[int, ...], args: tuple[Any, ...]) -> None:
        core = _core()
        config = core.LaunchConfig(grid=grid, block=block)
        core.launch(self.backend.stream, config, _kernel(kernel, *types, self.arch), *args)


def _run(array: Any) -> CorePythonLauncher:
    return CorePythonLauncher.for_array(array)


# Every kernel of the first six families, each run by its driver in .cuda_c.drivers; the
# launcher is looked up at each call (the host tests swap this module's _run).
drivers.implement_by_drivers(CORE_KERNELS, backend=BACKEND, name=NAME, module=__name__,
                             launcher_for=lambda array: _run(array))
