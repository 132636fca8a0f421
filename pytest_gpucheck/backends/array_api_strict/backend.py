"""array-api-strict: the standard's reference namespace, on the host.

`array-api-strict <https://data-apis.org/array-api-strict/>`_ implements the
Python array API standard and refuses everything outside it (NumPy's extra
functions and methods, implicit conversions, value-based casting).  Projects
run their ``xp`` tests on it to prove that their code uses only the standard.
It has no kernels of its own, so the bundled kernel suites mark it not
applicable, and the MPI checks, which need NumPy's array methods, too; its
arrays take part in what needs only the standard: the user's ``xp`` tests and
the interop suite's DLPack exchanges on the CPU device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.base import Backend, BackendUnavailable, Probe

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.array_ops import ArrayOps


class ArrayApiStrictBackend(Backend):
    """``array_api_strict`` arrays on its default (CPU) device."""

    name = "array-api-strict"
    tier = "cpu"
    distribution = "array-api-strict"
    install_hint = "pip install 'pytest-gpucheck[cpu]' (or: pip install array-api-strict)"
    single_threaded = True

    def _probe(self) -> Probe:
        strict = self._import("array_api_strict")
        return Probe(True, version=strict.__version__,
                     device=f"cpu (array API {strict.__array_api_version__})")

    @property
    def module(self) -> Any:
        import array_api_strict

        return array_api_strict

    @property
    def xp(self) -> Any:
        return self.module  # the standard's namespace itself: no compat layer between

    def to_device(self, host: np.ndarray) -> Any:
        # A copy, as on a device; the standard takes a NumPy array through the buffer
        # protocol or DLPack, not NumPy's extras.
        return self.module.asarray(np.array(host, copy=True), copy=True)

    def to_host(self, array: Any) -> np.ndarray:
        # DLPack on the CPU device, the standard's one way out.
        return np.array(np.from_dlpack(array), copy=True)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        strict = self.module
        return strict.empty(shape, dtype=getattr(strict, np.dtype(dtype).name))

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        strict = self.module
        return strict.full(shape, value, dtype=getattr(strict, np.dtype(dtype).name))

    def copy(self, src: Any, dst: Any) -> Any:
        return self.module.asarray(src, copy=True)  # no in-place copy in the standard

    def mpi_ops(self) -> ArrayOps:
        # The MPI checks hand arrays to mpi4py as buffers and update them with NumPy's
        # methods (ascontiguousarray, copy, dtype.type); the standard has neither.
        raise BackendUnavailable(
            "not applicable: array-api-strict takes no part in the MPI checks (they "
            "hand buffers to mpi4py and use NumPy's array methods, which the standard "
            "does not have)")

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.array_api_strict.adapter import ArrayApiStrictAdapter

        return ArrayApiStrictAdapter(self)
