"""How device data reaches MPI: passed directly, or staged through host memory.

* :class:`DirectTransport` hands device arrays to mpi4py, which reads them
  through the CUDA Array Interface or DLPack.  On a GPU that needs a
  GPU-aware MPI (see :mod:`.gpu_aware`); on the CPU backends the "device" is
  host memory, so it always works there (except JAX, whose arrays are
  immutable and cannot be received into).  The framework's queue is
  synchronized first: MPI does not know about the framework's streams.
* :class:`StagedTransport` copies to a NumPy buffer, calls MPI, and copies the
  result back to the device: slower, and works with any MPI.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_gpucheck.mpi.device_ops import ArrayOps


class StagedTransport:
    """Device -> host -> MPI -> host -> device."""

    name = "staged"

    def sendrecv(self, comm: Any, ops: ArrayOps, send: Any, dest: int, source: int) -> Any:
        """Send ``send`` to ``dest`` while receiving the same shape from ``source``."""
        host_send = ops.to_host(send)
        host_recv = np.empty_like(host_send)
        comm.Sendrecv(host_send, dest, recvbuf=host_recv, source=source)
        return ops.to_device(host_recv)

    def allreduce_sum(self, comm: Any, ops: ArrayOps, partial: Any) -> Any:
        from mpi4py import MPI

        host = ops.to_host(partial)
        total = np.empty_like(host)
        comm.Allreduce(host, total, op=MPI.SUM)
        return ops.to_device(total)

    def scatterv(self, comm: Any, ops: ArrayOps, whole: Any, counts: list[int],
                 dtype: np.dtype, root: int = 0) -> Any:
        """Rank ``r`` gets ``counts[r]`` consecutive elements of root's ``whole``."""
        send = None
        if comm.Get_rank() == root:
            send = [ops.to_host(whole), counts, _displacements(counts), _mpi_type(dtype)]
        local = np.empty(counts[comm.Get_rank()], dtype=dtype)
        comm.Scatterv(send, local, root=root)
        return ops.to_device(local)

    def gatherv(self, comm: Any, ops: ArrayOps, local: Any, counts: list[int],
                dtype: np.dtype, root: int = 0) -> Any:
        """Root gets the concatenation of every rank's ``local`` (others get None)."""
        whole = None
        receive = None
        if comm.Get_rank() == root:
            whole = np.empty(sum(counts), dtype=dtype)
            receive = [whole, counts, _displacements(counts), _mpi_type(dtype)]
        comm.Gatherv(ops.to_host(local), receive, root=root)
        return None if whole is None else ops.to_device(whole)


class DirectTransport:
    """Device arrays straight into MPI (GPU-aware MPI on a GPU; host memory on a CPU)."""

    name = "direct"

    def sendrecv(self, comm: Any, ops: ArrayOps, send: Any, dest: int, source: int) -> Any:
        receive = ops.empty(tuple(send.shape), dtype_of(send))
        ops.synchronize()  # the packed strip must be complete before MPI reads it
        comm.Sendrecv(send, dest, recvbuf=receive, source=source)
        return receive

    def allreduce_sum(self, comm: Any, ops: ArrayOps, partial: Any) -> Any:
        from mpi4py import MPI

        total = ops.empty(tuple(partial.shape), dtype_of(partial))
        ops.synchronize()
        comm.Allreduce(partial, total, op=MPI.SUM)
        return total

    def scatterv(self, comm: Any, ops: ArrayOps, whole: Any, counts: list[int],
                 dtype: np.dtype, root: int = 0) -> Any:
        send = None
        if comm.Get_rank() == root:
            send = [whole, counts, _displacements(counts), _mpi_type(dtype)]
        local = ops.empty((counts[comm.Get_rank()],), dtype)
        ops.synchronize()
        comm.Scatterv(send, local, root=root)
        return local

    def gatherv(self, comm: Any, ops: ArrayOps, local: Any, counts: list[int],
                dtype: np.dtype, root: int = 0) -> Any:
        whole = None
        receive = None
        if comm.Get_rank() == root:
            whole = ops.empty((sum(counts),), dtype)
            receive = [whole, counts, _displacements(counts), _mpi_type(dtype)]
        ops.synchronize()
        comm.Gatherv(local, receive, root=root)
        return whole


Transport = StagedTransport | DirectTransport


def _displacements(counts: list[int]) -> list[int]:
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])]


def _mpi_type(dtype: np.dtype) -> Any:
    from mpi4py.util.dtlib import from_numpy_dtype

    return from_numpy_dtype(np.dtype(dtype))


def dtype_of(array: Any) -> np.dtype:
    """NumPy dtype of any framework's array (torch prints ``torch.float64``)."""
    return np.dtype(str(array.dtype).removeprefix("torch."))
