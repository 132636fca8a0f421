"""NumPy arrays: DLPack on the CPU device, read-only flag supported."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts, host_facts


class NumpyAdapter(Adapter):
    """NumPy host arrays."""

    name = "numpy"
    readonly = "flag"

    def upload(self, host: np.ndarray) -> Any:
        return host.copy(order="K")

    def make_readonly(self, array: Any) -> Any:
        array.flags.writeable = False
        return array

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        if copy is not None and not _from_dlpack_takes_copy():
            raise NotAvailable(f"numpy {np.__version__}: from_dlpack takes no copy argument "
                               "(NumPy 2.1 added it)")

        def import_dlpack(obj: Any) -> Any:
            if copy is None:
                return np.from_dlpack(obj)
            return np.from_dlpack(obj, copy=copy)

        return import_dlpack

    def owns(self, array: Any) -> bool:
        return isinstance(array, np.ndarray)

    def facts(self, array: Any) -> ArrayFacts:
        return host_facts(array)

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array[index] = value

    def synchronize(self) -> None:
        """NumPy works synchronously."""


@functools.cache
def _from_dlpack_takes_copy() -> bool:
    """Whether ``numpy.from_dlpack`` accepts ``copy=`` (a builtin: no signature to read)."""
    try:
        np.from_dlpack(np.zeros(1), copy=None)
    except TypeError:
        return False
    return True
