"""Distributed patterns from the MPI tutorials, and checks against the global reference.

* **Row-block matrix multiply**: rank 0 scatters the row blocks of ``A``,
  broadcasts ``B``, every rank multiplies its block on its device, rank 0
  gathers ``C``.  An uneven split must keep the remainder rows.
* **Monte Carlo across ranks**: every rank draws its own samples; the pooled
  estimate of pi has the error of the *total* sample count only when the
  ranks' streams are independent.  Ranks that share a seed draw the very same
  points, so the pooled points repeat (and the error does not shrink with the
  rank count): the check names the ranks.

Both checks are collective (every rank raises the same verdict, see
:func:`~pytest_gpucheck.mpi.checks.collective_verdict`), and the
implementation is a parameter, so a user's own (or a deliberately broken one)
is checked the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_gpucheck.backends.base import Backend
from pytest_gpucheck.checking.randomness import uniform_samples_problems
from pytest_gpucheck.mpi.checks import collective_verdict, rank_local_failures_stop_the_job
from pytest_gpucheck.mpi.decomposition import Partition, block_range, coverage_problem
from pytest_gpucheck.mpi.device_ops import ArrayOps, NumbaOps, ops_for
from pytest_gpucheck.mpi.transport import Transport

_SHOWN = 4


def local_matmul(ops: ArrayOps, a: Any, b: Any) -> Any:
    """``a @ b`` on the backend's device; Numba's device arrays have no array namespace, so
    their block product runs on the host (the decomposition is what is checked)."""
    if isinstance(ops, NumbaOps):
        return ops.to_device(ops.to_host(a) @ ops.to_host(b))
    return ops.xp.matmul(a, b)


def row_block_matmul(comm: Any, a: np.ndarray | None, b: np.ndarray | None, ops: ArrayOps,
                     transport: Transport, *, partition: Partition = block_range) -> Any:
    """``A @ B`` by row blocks: scatter ``A`` (rank 0's), broadcast ``B``, multiply, gather.

    Returns ``C`` (a device array) on rank 0 and None elsewhere.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    shapes = comm.bcast((a.shape, b.shape, a.dtype.str)
                        if a is not None and b is not None else None, root=0)
    (m, k), (_, n), dtype = shapes[0], shapes[1], np.dtype(shapes[2])
    rows = [partition(m, size, r) for r in range(size)]
    counts = [(stop - start) * k for start, stop in rows]
    whole_a = ops.to_device(np.ascontiguousarray(a).reshape(-1)) if rank == 0 else None
    local_a = ops.to_host(transport.scatterv(comm, ops, whole_a, counts, dtype))
    b_host = comm.bcast(np.ascontiguousarray(b) if rank == 0 else None, root=0)
    local_rows = rows[rank][1] - rows[rank][0]
    block = local_matmul(ops, ops.to_device(local_a.reshape(local_rows, k)), ops.to_device(b_host))
    c_counts = [(stop - start) * n for start, stop in rows]
    flat = ops.to_device(ops.to_host(block).reshape(-1))
    gathered = transport.gatherv(comm, ops, flat, c_counts, dtype)
    if rank != 0:
        return None
    total_rows = sum(stop - start for start, stop in rows)
    return ops.to_device(ops.to_host(gathered).reshape(total_rows, n))


@rank_local_failures_stop_the_job
def check_row_block_matmul(comm: Any, backend: Backend, transport: Transport, a: np.ndarray,
                           b: np.ndarray, *, matmul: Callable[..., Any] = row_block_matmul,
                           partition: Partition = block_range) -> None:
    """The gathered product equals ``reference_kernels`` ``matmul`` of the global matrices.

    Inputs are small integer-valued numbers, so the product is exact in any
    order: a row lost, duplicated or misplaced changes the result.
    """
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    rank, size = comm.Get_rank(), comm.Get_size()
    m = a.shape[0]
    problems = [coverage_problem(m, [partition(m, size, r) for r in range(size)])
                if rank == 0 else None]
    kwargs = {} if partition is block_range else {"partition": partition}
    c = matmul(comm, a if rank == 0 else None, b if rank == 0 else None, ops, transport,
               **kwargs)
    if rank == 0:
        expected = KERNELS["matmul"](a, b)
        got = ops.to_host(c)
        if got.shape != expected.shape:
            problems.append(f"C has shape {got.shape}, expected {expected.shape} "
                            f"(A {a.shape} split by rows over {size} ranks)")
        else:
            bad = np.argwhere(got != expected)
            if len(bad):
                shown = "; ".join(f"C[{i}, {j}] is {got[i, j]!r}, expected {expected[i, j]!r}"
                                  for i, j in bad[:_SHOWN])
                problems.append(f"{len(bad)} of {got.size} elements of C wrong: {shown}")
    collective_verdict(comm, [p for p in problems if p])


def independent_samples(comm: Any, seed: int, n: int) -> np.ndarray:
    """``n`` points uniform in [0, 1)^2 from this rank's own stream: NumPy's
    ``SeedSequence(seed).spawn(size)[rank]`` (independent by construction)."""
    stream = np.random.SeedSequence(seed).spawn(comm.Get_size())[comm.Get_rank()]
    return np.random.default_rng(stream).random((n, 2))


def shared_stream_problem(per_rank: list[np.ndarray]) -> str | None:
    """Name the first pair of ranks that drew a common point, or None."""
    seen: dict[tuple[float, float], int] = {}
    for rank, samples in enumerate(per_rank):
        for point in map(tuple, np.asarray(samples, dtype=np.float64)):
            key = (float(point[0]), float(point[1]))
            other = seen.get(key)
            if other is not None and other != rank:
                return (f"ranks {other} and {rank} drew the same point {key}: they share a "
                        "random stream (seed each rank's generator differently, e.g. "
                        "numpy.random.SeedSequence(seed).spawn(size)[rank]); the pooled "
                        "estimate's error then does not shrink with the rank count")
            seen.setdefault(key, rank)
    return None


def check_monte_carlo_streams(comm: Any, seed: int, n: int, *,
                              draw: Callable[[Any, int, int], np.ndarray] =
                              independent_samples) -> None:
    """Every rank's ``draw(comm, seed, n)`` comes from its own stream, and the pooled points
    pass the statistical tests of :mod:`pytest_gpucheck.checking.randomness` (pi within a z-bound of
    the total count, uniform coordinates; false-alarm rate 1e-6 each)."""
    samples = np.asarray(draw(comm, seed, n))
    per_rank = comm.allgather(samples)
    problems: list[str] = []
    if comm.Get_rank() == 0:
        shapes = {tuple(s.shape) for s in per_rank}
        if shapes != {(n, 2)}:
            problems.append(f"ranks drew samples of shapes {sorted(shapes)}, but each should "
                            f"draw ({n}, 2)")
        else:
            problems.append(shared_stream_problem(per_rank) or "")
            problems.extend(uniform_samples_problems(np.concatenate(per_rank)))
    collective_verdict(comm, [p for p in problems if p])


__all__ = ["check_monte_carlo_streams", "check_row_block_matmul", "independent_samples",
           "local_matmul", "row_block_matmul", "shared_stream_problem"]
