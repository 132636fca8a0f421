"""The few device-array operations distributed code needs, NumPy-like by default.

Distributed kernels pack a strip of a rank's block into a contiguous buffer,
hand it to MPI, and unpack what arrives into the ghost cells; they also run a
small local computation (a stencil step, a partial sum).  :class:`ArrayOps`
does that with a NumPy-like namespace (NumPy, CuPy); a framework whose arrays
differ returns its own subclass from :meth:`~.base.Backend.mpi_ops` (PyTorch,
JAX's immutable arrays, Numba device arrays, cuda-python buffers), beside its
backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend

Index = tuple[slice, ...]


class ArrayOps:
    """Operations on one backend's device arrays (NumPy-like namespaces: numpy, cupy)."""

    #: False where arrays cannot be written in place, so MPI cannot receive into them.
    receives_in_place = True

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def xp(self) -> Any:
        """The backend's own module (``ascontiguousarray`` and ``contiguous_format`` are
        not in the array API standard), NumPy where the backend has none."""
        return self.backend.module if self.backend.module is not None else np

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
