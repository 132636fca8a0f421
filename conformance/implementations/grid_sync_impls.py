"""Bundled cooperative kernel: ``heat_steps_grid_sync`` with ``@cuda.jit`` and
``cuda.cg.this_grid().sync()``, registered for ``numba-cuda`` and ``numba-cudasim``.

One launch computes every step: each thread updates its cells (a grid-stride
loop) from one buffer into the other, then the whole grid synchronises before
the next step reads what the others wrote.  A kernel that calls
``grid.sync()`` is launched cooperatively by Numba, and every block of a
cooperative grid must be resident on the device at once, so the grid is at
most ``kernel.max_cooperative_grid_blocks(block)`` blocks and the grid-stride
loop covers the rest of the field.  That holds on the simulator too, where the
answer is 1: the simulator runs one block at a time and its ``grid.sync()`` only
synchronises that block, so a grid of several blocks would read other blocks'
cells from uninitialised scratch (see :mod:`pytest_gpucheck.backends.numba.simulator_guard`).

Never run on a GPU in this project's CI; the simulator runs it (one block, so
synchronisation *between* blocks is checked only on a GPU).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

from ._applicability import not_applicable_elsewhere

KERNELS = ("heat_steps_grid_sync",)
BACKENDS = ("numba-cuda", "numba-cudasim")
#: Threads per block: small in the simulator (one Python thread per CUDA thread) so that
#: the drawn sizes span several strides of the grid-stride loop of its one block.
SIMULATOR_BLOCK = 8
GPU_BLOCK = 128


def simulated() -> bool:
    """True when ``numba.cuda`` is the simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    # numba.config sets its attributes at run time.
    return bool(getattr(config, "ENABLE_CUDASIM", False))


@functools.cache
def kernels() -> Any:
    """The cooperative kernel (imports ``numba.cuda`` on first call)."""
    from . import _grid_sync_kernels

    return _grid_sync_kernels.heat_steps


def max_cooperative_blocks(kernel: Any, args: tuple[Any, ...], block: int) -> int:
    """``max_cooperative_grid_blocks(block)`` of ``kernel`` compiled for ``args``.

    The method belongs to a compiled overload, not to the ``@cuda.jit`` dispatcher:
    ``kernel.specialize(*args)`` compiles the one overload (the simulator returns the
    kernel itself, whose ``overloads[...]`` answers 1 for any signature)."""
    overloads = kernel.specialize(*args).overloads
    overload = next(iter(overloads.values()), None)
    if overload is None:  # the simulator's overload dict is empty but answers any key
        overload = overloads[()]
    return int(overload.max_cooperative_grid_blocks(block))


def cooperative_grid(kernel: Any, args: tuple[Any, ...], n: int, block: int) -> int:
    """Blocks for ``n`` cells: one cell per thread, at most what can be resident at once
    (:func:`max_cooperative_blocks`: 1 on the simulator, which runs one block at a time
    and cannot synchronise blocks)."""
    wanted = max(1, math.ceil(n / block))
    return max(1, min(wanted, max_cooperative_blocks(kernel, args, block)))


def launch_heat_steps(kernel: Any, u: Any, alpha: Any, steps: Any, out: Any) -> None:
    """Launch ``kernel`` (the bundled one, or a variant with the same signature) cooperatively
    on two scratch buffers; the result lands in ``out``."""
    from numba import cuda

    n = int(u.shape[0])
    if n == 0:
        return
    block = SIMULATOR_BLOCK if simulated() else GPU_BLOCK
    a = cuda.device_array(n, dtype=out.dtype)
    b = cuda.device_array(n, dtype=out.dtype)
    args = (u, a, b, out, np.dtype(out.dtype).type(alpha), int(steps))
    kernel[cooperative_grid(kernel, args, n, block), block](*args)
    cuda.synchronize()


@implements("heat_steps_grid_sync", backend="numba-cuda", name="grid-sync", origin="bundled")
@implements("heat_steps_grid_sync", backend="numba-cudasim", name="grid-sync",
            origin="bundled")
def heat_steps_grid_sync(u: Any, alpha: Any, steps: Any, out: Any) -> None:
    """Every step in one cooperative launch, ``grid.sync()`` between steps."""
    launch_heat_steps(kernels(), u, alpha, steps, out)


not_applicable_elsewhere(
    KERNELS, BACKENDS,
    {"cupy": "not yet bundled: CuPy reaches grid synchronisation through RawKernel with "
             "cooperative groups (cooperative launch), which this suite has no "
             "implementation of yet",
     "cuda-python": "not yet bundled: a cooperative cuda.core launch "
                    "(LaunchConfig(cooperative_launch=True)) has no implementation here yet"},
    "grid synchronisation inside one kernel launch is a CUDA cooperative-groups feature; "
    "this framework has no user-level kernel launch")

__all__ = ["KERNELS", "cooperative_grid", "kernels", "launch_heat_steps", "max_cooperative_blocks",
           "simulated"]
