"""Distributed kernels: the bundled implementations the MPI conformance suites check.

Each takes the communicator, the rank's device data, the backend's
:class:`~.device_ops.ArrayOps` and a transport, so the same code runs on every
backend and with device buffers passed to MPI directly or staged through the
host.  A user's own implementation with the same signature can be handed to
the checks in :mod:`.checks` instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.mpi.device_ops import ArrayOps
from pytest_gpucheck.mpi.transport import Transport, dtype_of


def _strip(ndim: int, axis: int, start: int, stop: int) -> tuple[slice, ...]:
    index = [slice(None)] * ndim
    index[axis] = slice(start, stop)
    return tuple(index)


def exchange_axis(comm: Any, a: Any, width: int, axis: int, lower: int, upper: int,
                  ops: ArrayOps, transport: Transport) -> Any:
    """Fill both ghost strips of ``a`` along ``axis`` from the ``lower``/``upper`` neighbours.

    My last interior strip goes up and becomes the upper neighbour's low ghost;
    my first interior strip goes down and becomes the lower neighbour's high
    ghost.  Each is one ``Sendrecv``, so no ordering can deadlock.  Strips span
    the whole array across the other axes, ghosts included: exchanging the
    second axis after the first therefore carries the corners.
    """
    if width == 0:
        return a
    n = a.shape[axis]
    w = width
    arrived = transport.sendrecv(comm, ops, ops.take(a, _strip(a.ndim, axis, n - 2 * w, n - w)),
                                 dest=upper, source=lower)
    a = ops.put(a, _strip(a.ndim, axis, 0, w), arrived)
    arrived = transport.sendrecv(comm, ops, ops.take(a, _strip(a.ndim, axis, w, 2 * w)),
                                 dest=lower, source=upper)
    return ops.put(a, _strip(a.ndim, axis, n - w, n), arrived)


def halo_exchange_1d(comm: Any, a: Any, width: int, ops: ArrayOps, transport: Transport) -> Any:
    """Periodic ghost exchange of a 1-D block ``a`` (interior plus ``width`` ghosts per side)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    return exchange_axis(comm, a, width, 0, (rank - 1) % size, (rank + 1) % size, ops, transport)


def halo_exchange_2d(cart: Any, a: Any, width: int, ops: ArrayOps, transport: Transport) -> Any:
    """Periodic ghost exchange of a 2-D block on a periodic process grid, corners included.

    Axis 1 first, then axis 0 over full rows (which include the axis-1 ghosts
    just filled): the corner ghosts get the diagonal neighbour's corner.
    """
    for axis in (1, 0):
        lower, upper = cart.Shift(axis, 1)
        a = exchange_axis(cart, a, width, axis, lower, upper, ops, transport)
    return a


def heat_steps_1d(comm: Any, u: Any, alpha: float, steps: int, first: bool, last: bool,
                  ops: ArrayOps, transport: Transport) -> Any:
    """``steps`` explicit heat steps of a 1-D block with one ghost cell per side.

    The global walls (the first cell of the first rank and the last of the last)
    are held at 0, as in the single-domain reference; the ends of the rank
    chain are not periodic (``MPI.PROC_NULL`` neighbours).
    """
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    lower = rank - 1 if rank > 0 else MPI.PROC_NULL
    upper = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    n = u.shape[0]
    wall = ops.to_device(np.zeros(1, dtype=dtype_of(u)))
    for _ in range(steps):
        # A PROC_NULL neighbour leaves the ghost as it was: only the wall cell,
        # reset right after, reads it.
        u = exchange_axis(comm, u, 1, 0, lower, upper, ops, transport)
        u = ops.heat_interior(u, alpha)
        if first:
            u = ops.put(u, (slice(1, 2),), wall)
        if last:
            u = ops.put(u, (slice(n - 2, n - 1),), wall)
    return u


def allreduce_sum(comm: Any, x: Any, ops: ArrayOps, transport: Transport) -> Any:
    """``[sum of every rank's x]`` on every rank: a local device sum, then ``Allreduce``."""
    return transport.allreduce_sum(comm, ops, ops.partial_sum(x))


def allreduce_dot(comm: Any, x: Any, y: Any, ops: ArrayOps, transport: Transport) -> Any:
    """``[global x . y]`` on every rank."""
    return transport.allreduce_sum(comm, ops, ops.partial_dot(x, y))
