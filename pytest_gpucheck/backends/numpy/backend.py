"""The NumPy reference backend: host arrays, always available."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.base import Backend, Probe

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter


class HostArrays(Backend):
    """NumPy arrays on the host as the device arrays: the array methods of every
    backend whose kernels take and return NumPy arrays (NumPy, ``numba-cpu``)."""

    @property
    def module(self) -> Any:
        return np

    def to_device(self, host: np.ndarray) -> Any:
        # A copy, as on a device: a kernel that writes its input must not write the caller's.
        return np.array(host, copy=True)

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.empty(shape, dtype=dtype)


class NumpyBackend(HostArrays):
    """NumPy on the host: the reference every other backend is checked against."""

    name = "numpy"
    tier = "cpu"
    distribution = "numpy"
    install_hint = "pip install numpy"
    single_threaded = True

    def _probe(self) -> Probe:
        return Probe(True, version=np.__version__, device="cpu")

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.numpy.adapter import NumpyAdapter

        return NumpyAdapter(self)
