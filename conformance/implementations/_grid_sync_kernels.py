# Kernel bodies are device code: ``cuda.grid`` and friends are compiler intrinsics
# whose host-side Python stubs do not describe their device types.
# mypy: disable-error-code="call-arg, var-annotated"
"""The cooperative ``@cuda.jit`` kernel of ``heat_steps_grid_sync``.

Imported on first call only (``numba.cuda`` binds to the simulator or the GPU
when first imported).  ``cuda`` must be a module global here: the simulator
runs a kernel with its own ``cuda`` module swapped into the kernel's globals.
"""

from __future__ import annotations

from typing import Any

from numba import cuda


@cuda.jit(device=True)
def heat_step_cell(src: Any, dst: Any, alpha: Any, i: int, n: int) -> None:
    """One cell of one heat step, walls held at 0."""
    if 0 < i < n - 1:
        dst[i] = src[i] + alpha * (src[i - 1] - 2 * src[i] + src[i + 1])
    else:
        dst[i] = 0


@cuda.jit
def heat_steps(u: Any, a: Any, b: Any, out: Any, alpha: Any, steps: Any) -> None:
    """``steps`` heat steps of ``u`` into ``out`` in one launch, ping-ponging between the
    scratch buffers ``a`` and ``b``; the whole grid synchronises between steps."""
    grid = cuda.cg.this_grid()
    n = u.shape[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        a[i] = u[i]
    grid.sync()
    for k in range(steps):
        for i in range(start, n, stride):
            if k % 2 == 0:
                heat_step_cell(a, b, alpha, i, n)
            else:
                heat_step_cell(b, a, alpha, i, n)
        # Every cell of this step is written before any is read for the next.
        grid.sync()
    for i in range(start, n, stride):
        out[i] = a[i] if steps % 2 == 0 else b[i]
