"""NumPy arrays on the host as a backend's device arrays (:class:`HostArrays`): the array
methods of every backend whose kernels take and return NumPy arrays (``numpy``,
``numba-cpu``), beside the backends' folders so that neither imports the other."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.backends.base import Backend


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
