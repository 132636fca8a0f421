"""Distributed conformance checks against the single-domain NumPy references.

Each check decomposes a global problem over the ranks of ``comm``, runs a
distributed implementation on the backend's device arrays, and compares every
rank's result with the matching part of the global reference from
``reference_kernels``.  Verdicts are collective: each rank's problems are
gathered and the same :class:`AssertionError`, labelled by rank, is raised on
every rank, so all ranks agree (hypothesis then shrinks identically on all of
them).  The implementation and the decomposition are parameters, so a user's
own (or a deliberately broken one) is checked the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from pytest_gpucheck.backends.base import Backend
from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.mpi import distributed
from pytest_gpucheck.mpi.decomposition import Partition, block_range, coverage_problem
from pytest_gpucheck.mpi.device_ops import ops_for
from pytest_gpucheck.mpi.transport import Transport
from pytest_gpucheck.mpi.watchdog import rank_local_failure, ranks_in_step

#: Value of ghost cells before an exchange: no interior cell ever holds it.
POISON = -1.0
_SHOWN = 4  # wrong cells quoted per rank


class CollectiveFailure(AssertionError):
    """A verdict every rank raises together (:func:`collective_verdict`)."""


def collective_verdict(comm: Any, problems: list[str]) -> None:
    """Raise the same AssertionError on every rank if any rank found a problem."""
    everyone = comm.allgather([p for p in problems if p])
    ranks_in_step()
    lines = [f"rank {rank}: {p}" for rank, found in enumerate(everyone) for p in found]
    if lines:
        raise CollectiveFailure("\n".join(lines))


Check = TypeVar("Check", bound=Callable[..., None])


def rank_local_failures_stop_the_job(check: Check) -> Check:
    """Report an exception ``check`` raises on this rank (not a collective verdict) to the
    watchdog, then re-raise it: the peers may wait in a collective this rank skipped, and
    hypothesis would send this rank on to the next example (G13 of the first H100 run:
    rank 0 in ``allgather``, rank 1 in ``Allreduce`` until the 120 s timeout)."""

    @functools.wraps(check)
    def guarded(*args: Any, **kwargs: Any) -> None:
        try:
            check(*args, **kwargs)
        except CollectiveFailure:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            rank_local_failure(f"{check.__name__} raised on this rank: "
                               f"{type(exc).__name__}: {first}")
            raise

    return guarded  # type: ignore[return-value]


def _compare(got: np.ndarray, expected: np.ndarray, where: Callable[[tuple[int, ...]], str],
             rule: tol.Tolerance | None = None) -> str | None:
    """Cells of ``got`` off ``expected``: exactly, or under the kernel's ``rule``."""
    if got.shape != expected.shape:
        return f"result has shape {got.shape}, expected {expected.shape}"
    wrong = rule.mismatches(got, expected) if rule is not None else ~np.isclose(
        got, expected, rtol=0.0, atol=0.0, equal_nan=False)
    bad = np.argwhere(wrong)
    if not len(bad):
        return None
    shown = "; ".join(
        f"{where(tuple(int(i) for i in idx))} is {got[tuple(idx)]!r}, expected "
        f"{expected[tuple(idx)]!r}" for idx in bad[:_SHOWN])
    more = f" (and {len(bad) - _SHOWN} more)" if len(bad) > _SHOWN else ""
    return f"{len(bad)} of {got.size} cells wrong: {shown}{more}"


def _rank_block(comm: Any, n: int, partition: Partition) -> tuple[int, int, list[str | None]]:
    """This rank's block ``[start, stop)`` of ``n`` elements under ``partition``, and the
    problems a check starts from: on rank 0, whether the blocks of all ranks tile
    ``[0, n)`` exactly once (the blocks are gathered collectively: every rank takes part)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    start, stop = partition(n, size, rank)
    ranges = comm.allgather((start, stop))  # collective: every rank takes part
    ranks_in_step()
    return start, stop, [coverage_problem(n, ranges) if rank == 0 else None]


def _kind(index: int, length: int, width: int) -> str:
    return "ghost" if index < width or index >= length - width else "interior"


@rank_local_failures_stop_the_job
def check_halo_exchange_1d(comm: Any, backend: Backend, transport: Transport, n: int,
                           width: int, *, exchange: Callable[..., Any] =
                           distributed.halo_exchange_1d, partition: Partition = block_range,
                           dtype: Any = np.float64) -> None:
    """Periodic 1-D exchange of an ``n``-cell domain: every rank's block equals the global one."""
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    start, stop, problems = _rank_block(comm, n, partition)
    values = np.arange(1, n + 1, dtype=dtype)  # distinct: a misplaced cell cannot match
    padded = np.zeros(n + 2 * width, dtype=dtype)
    padded[width : width + n] = values
    expected = KERNELS["halo_exchange_1d"](padded, width)[start : stop + 2 * width]
    local = np.full(stop - start + 2 * width, POISON, dtype=dtype)
    local[width : width + stop - start] = values[start:stop]
    got = ops.to_host(exchange(comm, ops.to_device(local), width, ops, transport))
    length = local.shape[0]
    problems.append(_compare(got, expected, lambda i: (
        f"{_kind(i[0], length, width)} cell {i[0]} (global {start + i[0] - width})")))
    collective_verdict(comm, [p for p in problems if p])


def process_grid(comm: Any) -> Any:
    """A periodic 2-D Cartesian communicator over all ranks of ``comm``."""
    from mpi4py import MPI

    dims = MPI.Compute_dims(comm.Get_size(), 2)
    return comm.Create_cart(dims, periods=[True, True], reorder=False)


@rank_local_failures_stop_the_job
def check_halo_exchange_2d(comm: Any, backend: Backend, transport: Transport,
                           shape: tuple[int, int], width: int, *,
                           exchange: Callable[..., Any] = distributed.halo_exchange_2d,
                           partition: Partition = block_range, dtype: Any = np.float64) -> None:
    """Periodic 2-D exchange, corners included, on a periodic process grid."""
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    cart = process_grid(comm)
    try:
        dims = cart.Get_topo()[0]
        coords = cart.Get_coords(cart.Get_rank())
        (r0, r1), (c0, c1) = (partition(shape[axis], dims[axis], coords[axis]) for axis in (0, 1))
        problems: list[str | None] = []
        if cart.Get_rank() == 0:
            for axis in (0, 1):
                ranges = [partition(shape[axis], dims[axis], i) for i in range(dims[axis])]
                problem = coverage_problem(shape[axis], ranges)
                problems.append(problem and f"axis {axis}: {problem}")
        ny, nx = shape
        w = width
        values = np.arange(1, ny * nx + 1, dtype=dtype).reshape(shape)
        padded = np.zeros((ny + 2 * w, nx + 2 * w), dtype=dtype)
        padded[w : w + ny, w : w + nx] = values
        expected = KERNELS["halo_exchange_2d"](padded, w)[r0 : r1 + 2 * w, c0 : c1 + 2 * w]
        local = np.full((r1 - r0 + 2 * w, c1 - c0 + 2 * w), POISON, dtype=dtype)
        local[w : w + r1 - r0, w : w + c1 - c0] = values[r0:r1, c0:c1]
        got = ops.to_host(exchange(cart, ops.to_device(local), w, ops, transport))
        rows, cols = local.shape

        def where(i: tuple[int, ...]) -> str:
            kinds = {_kind(i[0], rows, w), _kind(i[1], cols, w)}
            kind = "corner ghost" if kinds == {"ghost"} else (
                "ghost" if "ghost" in kinds else "interior")
            return f"{kind} cell {i} (block at rows {r0}:{r1}, cols {c0}:{c1})"

        problems.append(_compare(got, expected, where))
        collective_verdict(cart, [p for p in problems if p])
    finally:
        cart.Free()


@rank_local_failures_stop_the_job
def check_heat_steps_1d(comm: Any, backend: Backend, transport: Transport, u: np.ndarray,
                        alpha: float, steps: int, *,
                        stepper: Callable[..., Any] = distributed.heat_steps_1d,
                        partition: Partition = block_range) -> None:
    """``steps`` distributed heat steps equal the single-domain ``heat_steps_1d`` result.

    Tolerance: the kernel's own rule (its catalog entry names it; the suites and
    the direct checks apply the same one): each step rounds a few times per cell
    and the scheme is stable for ``alpha <= 1/2`` (no error grows), so ``steps *
    gamma_7 * (1 + 4 alpha) * max|u|`` bounds any evaluation order or fused
    multiply-add; a wrong neighbour value is off by ``alpha * |u|``, far above that.
    """
    from pytest_gpucheck.checking.kernel_rules import tolerance_of
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    n = u.shape[0]
    start, stop, problems = _rank_block(comm, n, partition)
    whole = KERNELS["heat_steps_1d"](u, alpha, steps)
    expected = whole[start:stop]
    rule = tolerance_of("heat_steps_1d", {"u": u, "alpha": alpha, "steps": steps}, whole)
    local = np.zeros(stop - start + 2, dtype=u.dtype)
    local[1:-1] = u[start:stop]
    out = stepper(comm, ops.to_device(local), alpha, steps, start == 0, stop == n, ops, transport)
    got = ops.to_host(out)[1:-1]
    problems.append(_compare(got, expected, lambda i: f"cell {start + i[0]}", rule))
    collective_verdict(comm, [p for p in problems if p])


@rank_local_failures_stop_the_job
def check_allreduce(comm: Any, backend: Backend, transport: Transport, x: np.ndarray,
                    y: np.ndarray | None = None, *, partition: Partition = block_range) -> None:
    """Allreduce of local sums (or of local dot products with ``y``) equals the global one.

    Inputs are integer-valued, so every partial and the total are exact in any
    order: one element lost or counted twice changes the result.
    """
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    n = x.shape[0]
    start, stop, problems = _rank_block(comm, n, partition)
    if y is None:
        expected = KERNELS["sum"](x)
        total = distributed.allreduce_sum(comm, ops.to_device(x[start:stop]), ops, transport)
    else:
        expected = KERNELS["dot"](x, y)
        total = distributed.allreduce_dot(comm, ops.to_device(x[start:stop]),
                                          ops.to_device(y[start:stop]), ops, transport)
    what = "sum" if y is None else "dot"
    problems.append(_compare(ops.to_host(total), expected, lambda i: f"global {what}"))
    collective_verdict(comm, [p for p in problems if p])


@rank_local_failures_stop_the_job
def check_scatter_compute_gather(comm: Any, backend: Backend, transport: Transport, alpha: float,
                                 x: np.ndarray, y: np.ndarray, *,
                                 partition: Partition = block_range) -> None:
    """Scatter ``x``, ``y`` from rank 0, ``saxpy`` on every rank's device, gather: equals saxpy."""
    from pytest_gpucheck.reference_kernels import KERNELS

    ops = ops_for(backend)
    rank, size = comm.Get_rank(), comm.Get_size()
    n = x.shape[0]
    ranges = [partition(n, size, r) for r in range(size)]
    counts = [stop - start for start, stop in ranges]
    problems = [coverage_problem(n, ranges) if rank == 0 else None]
    dtype = x.dtype
    whole_x = ops.to_device(x) if rank == 0 else None
    whole_y = ops.to_device(y) if rank == 0 else None
    local_x = transport.scatterv(comm, ops, whole_x, counts, dtype)
    local_y = transport.scatterv(comm, ops, whole_y, counts, dtype)
    gathered = transport.gatherv(comm, ops, ops.saxpy(alpha, local_x, local_y), counts, dtype)
    if rank == 0:
        expected = KERNELS["saxpy"](alpha, x, y)
        problems.append(_compare(ops.to_host(gathered), expected, lambda i: f"element {i[0]}"))
    collective_verdict(comm, [p for p in problems if p])
