"""Numba CUDA device arrays, on a GPU and on the CUDA simulator.

On a GPU, ``DeviceNDArray`` exports ``__cuda_array_interface__`` and
``numba.cuda.as_cuda_array`` imports it.  Whether each side exists is looked
up on the live objects, never assumed: the simulator's ``FakeCUDAArray`` (in
numba-cuda 0.30) has no ``__cuda_array_interface__``, and the simulator has no
``as_cuda_array``, which the matrix then reports as "not available".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts


class NumbaCudaAdapter(Adapter):
    """``numba.cuda`` device arrays (real GPU, or the simulator for ``numba-cudasim``)."""

    readonly = "never"  # DeviceNDArray has no read-only flag (its CAI says writable)

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.name = backend.name  # type: ignore[misc]  # numba-cuda or numba-cudasim
        self.simulated = bool(backend.is_simulator)

    def _cuda(self) -> Any:
        from numba import cuda

        return cuda

    @property
    def device(self) -> str:
        # Simulator memory is host memory, but it stands for a GPU: keep it apart.
        return "cudasim" if self.simulated else f"cuda:{self.backend.device_index}"

    def dtype_problem(self, dtype_name: str) -> str | None:
        problem = super().dtype_problem(dtype_name)
        if problem is None:
            from pytest_gpucheck.backends.dtypes import numpy_dtype

            try:
                from numba.np.numpy_support import from_dtype

                from_dtype(numpy_dtype(dtype_name))
            except Exception as exc:  # numba raises NumbaNotImplementedError and others
                problem = f"numba has no {dtype_name} type ({type(exc).__name__})"
        return problem

    def upload(self, host: np.ndarray) -> Any:
        # to_device keeps the host array's strides, so Fortran order survives.
        return self._cuda().to_device(host)

    def view(self, array: Any, slices: tuple[slice, ...]) -> Any:
        if array.size == 0:
            # numba-cuda 0.30 cannot slice a size-0 device array: its dummyarray reads
            # NumPy's zero strides of empty arrays as broadcast axes, and its extents of
            # empty arrays span items, so the view asks its NULL buffer for bytes
            # (RuntimeError: non-empty slice into empty slice; seen on an H200,
            # 2026-11-27, in the size-0 cases of every cai-numba-cuda->* exchange).
            # A view of nothing holds nothing: a new empty array of its shape is the same.
            shape = np.empty(array.shape, dtype=np.bool_)[slices].shape
            return self._cuda().device_array(shape, dtype=array.dtype)
        return array[slices]

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        from_dlpack = getattr(self._cuda(), "from_dlpack", None)
        if from_dlpack is None:
            raise NotAvailable(f"{self.name}: numba.cuda has no from_dlpack (kernels take "
                               "__dlpack__ arguments, but no array can be imported)")
        if copy is not None:
            raise NotAvailable(f"{self.name}: numba.cuda.from_dlpack takes no copy argument")
        return from_dlpack  # type: ignore[no-any-return]

    def cai_importer(self) -> Callable[[Any], Any]:
        as_cuda_array = getattr(self._cuda(), "as_cuda_array", None)
        if as_cuda_array is None:
            raise NotAvailable(f"{self.name}: numba.cuda has no as_cuda_array here")
        return as_cuda_array  # type: ignore[no-any-return]

    def owns(self, array: Any) -> bool:
        cuda = self._cuda()
        if self.simulated:
            return type(array).__name__ == "FakeCUDAArray"
        return bool(cuda.is_cuda_array(array)) and hasattr(array, "copy_to_host")

    def facts(self, array: Any) -> ArrayFacts:
        if self.simulated:
            # FakeCUDAArray forwards attribute look-ups to the NumPy array it wraps.
            pointer = int(array.__array_interface__["data"][0])
        else:
            pointer = int(array.__cuda_array_interface__["data"][0])
        return ArrayFacts(
            pointer=pointer,
            shape=tuple(array.shape),
            strides=tuple(int(s) for s in array.strides),
            dtype=np.dtype(array.dtype),
            device=self.device if self.simulated else _device_of(array, self.device),
            readonly=False,
        )

    def to_host(self, array: Any) -> np.ndarray:
        return self.backend.to_host(array)  # type: ignore[no-any-return]

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array[index] = np.asarray(value).reshape(())
        self.synchronize()


def _device_of(array: Any, default: str) -> str:
    """``cuda:N`` of the context a DeviceNDArray was allocated in (``default`` if it has none)."""
    context = getattr(getattr(array, "gpu_data", None), "context", None)
    device = getattr(context, "device", None)
    return f"cuda:{int(device.id)}" if device is not None else default
