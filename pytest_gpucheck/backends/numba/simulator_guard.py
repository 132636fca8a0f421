"""Guard against a false verdict from ``this_grid().sync()`` on Numba's CUDA simulator.

The simulator runs a kernel one block at a time (``for grid_point in
np.ndindex(*grid_dim)`` in ``numba/cuda/simulator/kernel.py``), and its
``GridGroup.sync()`` only synchronises the threads of the running block
("we only support cooperative grids with one block", ``kernelapi.py``).  A
cooperative kernel launched with more than one block therefore runs block 0's
every step before block 1 starts: what block 0 reads of block 1's cells is
whatever the scratch memory held, and the test passes or fails by luck.  On a
GPU, the same launch is refused (``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``)
once it is larger than ``kernel.max_cooperative_grid_blocks(block)``, which is
1 on the simulator.

:func:`install` wraps the simulator's ``GridGroup.sync`` so that a grid sync in
a grid of more than one block raises :class:`CooperativeGridTooLarge` with one
line saying why and what to launch instead.  The simulator hands an exception
raised in one of its threads to the launching thread (``BlockManager.run``
re-raises it, prefixed with the thread's ``tid=[...] ctaid=[...]``), so the
test that launched the kernel fails with that line.

The guard relies on three simulator internals, checked by :func:`install`
(and by ``tests/conformance/test_grid_sync_simulator.py``): ``kernelapi.GridGroup.sync``, the
running ``BlockThread``'s ``_manager._grid_dim``, and
``kernel.FakeOverload.max_cooperative_grid_blocks`` returning 1.  If upstream
starts running cooperative grids of several blocks (that method returns more
than 1), the guard steps aside and :func:`install` says so.
"""

from __future__ import annotations

import math
import threading
from typing import Any

#: Why a multi-block grid sync fails on the simulator; one line.
MESSAGE = (
    "this_grid().sync() in a cooperative grid of {blocks} blocks: the CUDA simulator runs one "
    "block at a time and cannot synchronise blocks, so the result would be luck (a GPU refuses "
    "a cooperative launch larger than max_cooperative_grid_blocks with "
    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE); launch at most "
    "kernel.max_cooperative_grid_blocks(block) blocks (1 on the simulator) and cover the "
    "data with a grid-stride loop"
)

_MARK = "__gpucheck_grid_sync_guard__"
_lock = threading.Lock()


class CooperativeGridTooLarge(RuntimeError):
    """``this_grid().sync()`` ran in a simulated grid of more than one block."""


def grid_blocks() -> int | None:
    """Blocks in the grid of the simulator thread calling this, ``None`` outside a kernel
    (or if the simulator no longer keeps the grid where this looks)."""
    manager = getattr(threading.current_thread(), "_manager", None)
    grid = getattr(manager, "_grid_dim", None)
    if grid is None:
        return None
    try:
        return math.prod(int(extent) for extent in grid)
    except TypeError:
        return None


def install() -> str | None:
    """Wrap the simulator's ``GridGroup.sync`` (once per process); never raises.

    Returns ``None`` when the guard is in place, otherwise one line saying why it is not
    (the simulator changed, or is not importable here).  Importing the simulator binds
    ``numba.cuda``: call this only where ``NUMBA_ENABLE_CUDASIM=1``.
    """
    try:
        from numba.cuda.simulator import kernel, kernelapi
    except Exception as exc:  # no numba, or numba.cuda is the real target here
        return f"the CUDA simulator cannot be imported ({type(exc).__name__}: {exc})"
    group = getattr(kernelapi, "GridGroup", None)
    original = getattr(group, "sync", None)
    if group is None or original is None:
        return "numba's CUDA simulator no longer has kernelapi.GridGroup.sync; guard not installed"
    try:
        resident = int(kernel.FakeOverload().max_cooperative_grid_blocks((1, 1, 1)))
    except Exception as exc:
        return (f"numba's CUDA simulator changed: FakeOverload.max_cooperative_grid_blocks "
                f"failed ({type(exc).__name__}: {exc}); guard not installed")
    if resident != 1:
        return (f"numba's CUDA simulator now runs cooperative grids of {resident} blocks; the "
                f"one-block grid-sync guard steps aside")
    with _lock:
        if getattr(original, _MARK, False):
            return None

        def sync(self: Any) -> None:
            blocks = grid_blocks()
            if blocks is not None and blocks > 1:
                # A single-argument exception: the simulator rebuilds it as
                # type(e)(f"tid=... ctaid=...: {e}") before re-raising it in the launcher.
                raise CooperativeGridTooLarge(MESSAGE.format(blocks=blocks))
            original(self)

        setattr(sync, _MARK, True)
        sync.__doc__ = original.__doc__
        group.sync = sync
    return None


def installed() -> bool:
    """True when the simulator's ``GridGroup.sync`` is the guarded one (imports nothing)."""
    import sys

    kernelapi = sys.modules.get("numba.cuda.simulator.kernelapi")
    sync = getattr(getattr(kernelapi, "GridGroup", None), "sync", None)
    return bool(getattr(sync, _MARK, False))


__all__ = ["MESSAGE", "CooperativeGridTooLarge", "grid_blocks", "install", "installed"]
