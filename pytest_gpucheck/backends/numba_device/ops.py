"""The MPI array operations on Numba's CUDA device arrays (:class:`NumbaOps`): strided
copies and the ``@cuda.jit`` kernels of :mod:`.kernels`.

Shared by two backends, ``numba-cuda`` / ``numba-cudasim`` and ``cuda-python`` (Numba
views of its buffers), so it lives beside the backends' folders, not in one of them:
no backend imports another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.backends.array_ops import ArrayOps, Index


class NumbaOps(ArrayOps):
    """Numba device arrays (the CUDA simulator or a real GPU): strided copies and kernels."""

    def _cuda(self) -> Any:
        from numba import cuda

        return cuda

    def wrap(self, array: Any) -> Any:
        return array

    def to_device(self, host: np.ndarray) -> Any:
        return self.wrap(self.backend.to_device(np.ascontiguousarray(host)))

    def to_host(self, array: Any) -> np.ndarray:
        self.synchronize()
        return np.asarray(self.wrap(array).copy_to_host())

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._cuda().device_array(shape, dtype=dtype)

    def take(self, a: Any, index: Index) -> Any:
        view = self.wrap(a)[index]
        out = self.empty(view.shape, view.dtype)
        out[whole(out)] = view  # Numba's assignment kernel copies strided device views
        return out

    def put(self, a: Any, index: Index, values: Any) -> Any:
        self.wrap(a)[index] = values
        return a

    def heat_interior(self, u: Any, alpha: float) -> Any:
        u = self.wrap(u)
        out = self.empty(u.shape, u.dtype)
        out[whole(out)] = u
        if u.shape[0] > 2:
            _mpi_kernels().heat[_launch(u.shape[0] - 2)](u, u.dtype.type(alpha), out)
        return out

    def partial_sum(self, x: Any) -> Any:
        x = self.wrap(x)
        out = self._cuda().to_device(np.zeros(1, dtype=x.dtype))
        if x.shape[0]:
            _mpi_kernels().total[_launch(x.shape[0])](x, out)
        return out

    def partial_dot(self, x: Any, y: Any) -> Any:
        x, y = self.wrap(x), self.wrap(y)
        out = self._cuda().to_device(np.zeros(1, dtype=x.dtype))
        if x.shape[0]:
            _mpi_kernels().dot[_launch(x.shape[0])](x, y, out)
        return out

    def saxpy(self, alpha: float, x: Any, y: Any) -> Any:
        x, y = self.wrap(x), self.wrap(y)
        out = self.empty(x.shape, x.dtype)
        if x.shape[0]:
            _mpi_kernels().saxpy[_launch(x.shape[0])](x.dtype.type(alpha), x, y, out)
        return out


def whole(array: Any) -> Index:
    """Every element of ``array`` (``array[whole(array)] = v`` copies on the device)."""
    return tuple(slice(None) for _ in array.shape)


def _launch(n: int) -> tuple[int, int]:
    """(blocks, threads) covering ``n`` elements; no idle threads for small ``n``, which
    matters on the simulator (one Python thread per CUDA thread)."""
    threads = max(1, min(n, 128))
    return (n + threads - 1) // threads, threads


def _mpi_kernels() -> Any:
    """The kernels module (importing it imports ``numba.cuda``; Numba compiles lazily)."""
    from pytest_gpucheck.backends.numba_device import kernels

    return kernels
