"""The few device-array operations distributed code needs, for every backend.

Distributed kernels pack a strip of a rank's block into a contiguous buffer,
hand it to MPI, and unpack what arrives into the ghost cells; they also run a
small local computation (a stencil step, a partial sum).  :func:`ops_for`
gives one object per backend with those operations done *on the backend's
device*: the backend's :meth:`~pytest_gpucheck.backends.base.Backend.mpi_ops`.
The NumPy-like default (NumPy, CuPy) is
:class:`~pytest_gpucheck.backends.array_ops.ArrayOps`; PyTorch, JAX
(immutable arrays, updated with ``.at[]``), Numba device arrays and
cuda-python buffers (viewed through their CUDA Array Interface) define theirs
beside their backends.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.backends.array_ops import ArrayOps, Index
from pytest_gpucheck.backends.base import Backend, BackendUnavailable
from pytest_gpucheck.backends.numba_device.ops import NumbaOps


def ops_for(backend: Backend) -> ArrayOps:
    """The device-array operations of ``backend``.

    Where the backend cannot provide them (the cuda-python backend's operations
    are numba-cuda kernels, and numba-cuda cannot compile here) the test is
    skipped with that one line: every rank sees the same install, so every rank
    skips, and no rank waits for another in a collective.
    """
    try:
        return backend.mpi_ops()
    except BackendUnavailable as exc:
        pytest.skip(str(exc))


__all__ = ["ArrayOps", "Index", "NumbaOps", "ops_for"]
