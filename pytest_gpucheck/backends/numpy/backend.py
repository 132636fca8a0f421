"""The NumPy reference backend: host arrays, always available."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pytest_gpucheck.backends.base import Probe
from pytest_gpucheck.backends.host_arrays import HostArrays

__all__ = ["HostArrays", "NumpyBackend"]

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter


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
