"""The few device-array operations distributed code needs, for every backend.

Distributed kernels pack a strip of a rank's block into a contiguous buffer,
hand it to MPI, and unpack what arrives into the ghost cells; they also run a
small local computation (a stencil step, a partial sum).  :func:`ops_for`
gives one object per backend with those operations done *on the backend's
device*: NumPy-like namespaces (NumPy, CuPy, PyTorch), JAX (immutable arrays,
updated with ``.at[]``), and Numba device arrays (``numba-cudasim``,
``numba-cuda``, and ``cuda-python`` buffers viewed through their CUDA Array
Interface), whose kernels are compiled on first use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.base import Backend

Index = tuple[slice, ...]


class ArrayOps:
    """Operations on one backend's device arrays (NumPy-like namespaces: numpy, cupy)."""

    #: False where arrays cannot be written in place, so MPI cannot receive into them.
    receives_in_place = True

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def xp(self) -> Any:
        return self.backend.xp if self.backend.xp is not None else np

    def to_device(self, host: np.ndarray) -> Any:
        return self.backend.to_device(np.ascontiguousarray(host))

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(self.backend.to_host(array))

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.backend.empty(shape, dtype)

    def synchronize(self) -> None:
        self.backend.synchronize()

    def take(self, a: Any, index: Index) -> Any:
        """A contiguous copy of ``a[index]`` (what MPI sends)."""
        return self.xp.ascontiguousarray(a[index])

    def put(self, a: Any, index: Index, values: Any) -> Any:
        """``a[index] = values``; returns the updated array (a new one for JAX)."""
        a[index] = values
        return a

    def heat_interior(self, u: Any, alpha: float) -> Any:
        """A new array: ``u`` with one explicit heat step applied to ``u[1:-1]``."""
        out = u.copy()
        a = u.dtype.type(alpha)
        centre = u[1:-1]
        out[1:-1] = centre + a * (u[:-2] - u.dtype.type(2) * centre + u[2:])
        return out

    def partial_sum(self, x: Any) -> Any:
        """``[sum(x)]`` as a 1-element device array."""
        return self.xp.reshape(self.xp.sum(x), (1,))

    def partial_dot(self, x: Any, y: Any) -> Any:
        """``[sum(x * y)]`` as a 1-element device array."""
        return self.xp.reshape(self.xp.sum(x * y), (1,))

    def saxpy(self, alpha: float, x: Any, y: Any) -> Any:
        return x.dtype.type(alpha) * x + y


class TorchOps(ArrayOps):
    """PyTorch tensors (CPU or CUDA)."""

    def take(self, a: Any, index: Index) -> Any:
        return a[index].clone(memory_format=self.xp.contiguous_format)

    def heat_interior(self, u: Any, alpha: float) -> Any:
        out = u.clone()
        centre = u[1:-1]
        out[1:-1] = centre + alpha * (u[:-2] - 2 * centre + u[2:])
        return out

    def partial_sum(self, x: Any) -> Any:
        return self.xp.sum(x).reshape(1)

    def partial_dot(self, x: Any, y: Any) -> Any:
        return self.xp.sum(x * y).reshape(1)

    def saxpy(self, alpha: float, x: Any, y: Any) -> Any:
        return alpha * x + y


class JaxOps(ArrayOps):
    """JAX arrays: immutable, so every update returns a new array."""

    receives_in_place = False

    def take(self, a: Any, index: Index) -> Any:
        return a[index]

    def put(self, a: Any, index: Index, values: Any) -> Any:
        return a.at[index].set(values)

    def heat_interior(self, u: Any, alpha: float) -> Any:
        centre = u[1:-1]
        a = u.dtype.type(alpha)
        return u.at[1:-1].set(centre + a * (u[:-2] - u.dtype.type(2) * centre + u[2:]))


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
        out[_whole(out)] = view  # Numba's assignment kernel copies strided device views
        return out

    def put(self, a: Any, index: Index, values: Any) -> Any:
        self.wrap(a)[index] = values
        return a

    def heat_interior(self, u: Any, alpha: float) -> Any:
        u = self.wrap(u)
        out = self.empty(u.shape, u.dtype)
        out[_whole(out)] = u
        if u.shape[0] > 2:
            _numba_kernels().heat[_launch(u.shape[0] - 2)](u, u.dtype.type(alpha), out)
        return out

    def partial_sum(self, x: Any) -> Any:
        x = self.wrap(x)
        out = self._cuda().to_device(np.zeros(1, dtype=x.dtype))
        if x.shape[0]:
            _numba_kernels().total[_launch(x.shape[0])](x, out)
        return out

    def partial_dot(self, x: Any, y: Any) -> Any:
        x, y = self.wrap(x), self.wrap(y)
        out = self._cuda().to_device(np.zeros(1, dtype=x.dtype))
        if x.shape[0]:
            _numba_kernels().dot[_launch(x.shape[0])](x, y, out)
        return out

    def saxpy(self, alpha: float, x: Any, y: Any) -> Any:
        x, y = self.wrap(x), self.wrap(y)
        out = self.empty(x.shape, x.dtype)
        if x.shape[0]:
            _numba_kernels().saxpy[_launch(x.shape[0])](x.dtype.type(alpha), x, y, out)
        return out


class CudaPythonOps(NumbaOps):
    """cuda-python buffers, operated on through Numba views of their CUDA Array Interface."""

    def wrap(self, array: Any) -> Any:
        if hasattr(array, "copy_to_host"):
            return array
        return self._cuda().as_cuda_array(array)  # zero-copy; keeps ``array`` alive


def _whole(array: Any) -> Index:
    return tuple(slice(None) for _ in array.shape)


def _launch(n: int) -> tuple[int, int]:
    """(blocks, threads) covering ``n`` elements; no idle threads for small ``n``, which
    matters on the simulator (one Python thread per CUDA thread)."""
    threads = max(1, min(n, 128))
    return (n + threads - 1) // threads, threads


def _numba_kernels() -> Any:
    """The kernels module (importing it imports ``numba.cuda``; Numba compiles lazily)."""
    from . import numba_kernels

    return numba_kernels


def ops_for(backend: Backend) -> ArrayOps:
    """The device-array operations of ``backend``."""
    name = backend.name
    if name.startswith("torch"):
        return TorchOps(backend)
    if name.startswith("jax"):
        return JaxOps(backend)
    if name in ("numba-cuda", "numba-cudasim"):
        return NumbaOps(backend)
    if name == "cuda-python":
        return CudaPythonOps(backend)
    return ArrayOps(backend)  # numpy, numba-cpu (NumPy arrays), cupy
