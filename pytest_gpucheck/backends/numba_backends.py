"""Numba on three targets: ``@njit`` on the CPU, ``@cuda.jit`` on a GPU, and the
CUDA simulator.

Numba decides between the real CUDA target and the simulator when
``numba.cuda`` is first imported (``NUMBA_ENABLE_CUDASIM``), so the two cannot
share a process.  The plugin runs simulator items in a child process of their
own (:mod:`pytest_gpucheck.isolation`); in the parent, ``numba-cudasim`` is
probed without importing ``numba.cuda``.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

from ..child_env import SIMULATOR_CHILD_VARIABLE
from ._cuda_build import device_line, driver_problem
from .base import Backend, Probe

__all__ = ["SIMULATOR_CHILD_VARIABLE", "NumbaCpuBackend", "NumbaCudaBackend", "NumbaCudasimBackend"]


def simulator_requested() -> bool:
    """True where ``numba.cuda`` will be (or is) the simulator in this process."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


class NumbaCpuBackend(Backend):
    """``@numba.njit`` (and ``prange``) kernels on NumPy arrays."""

    name = "numba-cpu"
    tier = "cpu"
    distribution = "numba"
    install_hint = "pip install 'pytest-gpucheck[cpu]'"

    def _probe(self) -> Probe:
        numba = self._import("numba")
        return Probe(True, version=numba.__version__, device="cpu")

    @property
    def xp(self) -> Any:
        return np

    def to_device(self, host: np.ndarray) -> Any:
        return np.array(host, copy=True)

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.empty(shape, dtype=dtype)


class _NumbaCudaArrays(Backend):
    """Device-array operations shared by the real CUDA target and the simulator."""

    distribution = "numba-cuda"
    install_hint = "pip install 'pytest-gpucheck[cpu]'"

    def _cuda(self) -> Any:
        from numba import cuda

        return cuda

    def to_device(self, host: np.ndarray) -> Any:
        return self._cuda().to_device(np.ascontiguousarray(host))

    def to_host(self, array: Any) -> np.ndarray:
        self.synchronize()
        if isinstance(array, np.ndarray):
            return array.copy()
        if array.is_c_contiguous() or array.is_f_contiguous():
            return array.copy_to_host()
        # A strided view: gather it on the device first, then copy.
        dense = self._cuda().device_array(array.shape, dtype=array.dtype)
        dense[...] = array
        return dense.copy_to_host()

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._cuda().device_array(shape, dtype=dtype)

    def synchronize(self) -> None:
        self._cuda().synchronize()

    def version(self) -> str:
        return super().version() or _numba_version()


def _numba_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return ""


class NumbaCudaBackend(_NumbaCudaArrays):
    """``@cuda.jit`` kernels on a real CUDA device."""

    name = "numba-cuda"
    tier = "gpu"
    install_hint = "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])"

    def _probe(self) -> Probe:
        if simulator_requested():
            return Probe.missing(
                "NUMBA_ENABLE_CUDASIM is set, so numba.cuda is the simulator "
                "in this process; use the numba-cudasim backend"
            )
        if importlib.util.find_spec("numba") is None:
            return Probe.missing(f"numba is not installed; install it with: {self.install_hint}")
        problem = driver_problem()
        if problem:
            return Probe.missing(problem)
        cuda = self._cuda()
        nvvm = nvvm_problem()
        if nvvm:
            return Probe.missing(f"{nvvm}; install {self.install_hint}")
        if not cuda.is_available():
            return Probe.missing(
                "numba.cuda.is_available() is False (no usable CUDA toolkit "
                f"or device); install {self.install_hint}"
            )
        cuda.select_device(self.device_index)
        return Probe(True, version=self.version(), device=device_line(self.device_index))


def nvvm_problem() -> str | None:
    """Why libNVVM (numba-cuda's compiler, from the ``cu12``/``cu13`` extra) cannot load.

    Without it every ``@cuda.jit`` launch fails at compile time, so the probe says
    so instead.  Recent numba-cuda's ``cuda.is_available()`` includes this check
    but only answers False; older ones do not check at all.
    """
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception as exc:  # NvvmSupportError, or an import failure of the binding
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"libNVVM cannot be loaded ({type(exc).__name__}: {first})"
    return None


class NumbaCudasimBackend(_NumbaCudaArrays):
    """``@cuda.jit`` kernels on Numba's CUDA simulator (one Python thread per CUDA thread).

    Runs in a child process of its own; see :mod:`pytest_gpucheck.isolation`.
    """

    name = "numba-cudasim"
    tier = "cpu"

    def _probe(self) -> Probe:
        if importlib.util.find_spec("numba") is None:
            return Probe.missing(f"numba is not installed; install it with: {self.install_hint}")
        if importlib.util.find_spec("numba.cuda") is None:
            return Probe.missing(f"numba.cuda is missing; install it with: {self.install_hint}")
        if simulator_requested() and not _config_says_simulator():
            return Probe.missing(
                "numba.cuda was imported before NUMBA_ENABLE_CUDASIM was "
                "set, so this process cannot use the simulator"
            )
        if simulator_requested():  # grid.sync() over several blocks fails, not passes by luck
            __import__("pytest_gpucheck.cudasim_guard").cudasim_guard.install()
        return Probe(True, version=self.version(), device="CUDA simulator (cpu)")


def _config_says_simulator() -> bool:
    import numba

    return bool(getattr(numba.config, "ENABLE_CUDASIM", False))
