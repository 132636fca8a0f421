"""A user's cooperative heat kernel and its block-synchronised mistake, in a module of
their own: the simulator swaps its own ``cuda`` module into a kernel's globals, so
kernels are defined where ``cuda`` is a module global (imported on first use).

Both loop over the field with a grid stride, so one block covers any size: the launch
decides how many blocks run (``tests/broken_field_implementations.py``)."""

from __future__ import annotations

from typing import Any

from numba import cuda


def _make(grid_wide: bool) -> Any:
    @cuda.jit
    def heat_steps(u: Any, a: Any, b: Any, out: Any, alpha: Any, steps: Any) -> None:
        grid = cuda.cg.this_grid()
        n = u.shape[0]
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, n, stride):
            a[i] = u[i]
        if grid_wide:
            grid.sync()
        else:
            cuda.syncthreads()
        for k in range(steps):
            for i in range(start, n, stride):
                if k % 2 == 0:
                    src, dst = a, b
                else:
                    src, dst = b, a
                if 0 < i < n - 1:
                    dst[i] = src[i] + alpha * (src[i - 1] - 2 * src[i] + src[i + 1])
                else:
                    dst[i] = 0
            if grid_wide:
                grid.sync()
            else:
                cuda.syncthreads()
        for i in range(start, n, stride):
            out[i] = a[i] if steps % 2 == 0 else b[i]

    return heat_steps


GRID = _make(True)
BLOCK = _make(False)
