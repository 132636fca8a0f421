"""Conformance of cooperative kernels: ``heat_steps_grid_sync`` computes every heat step in
one launch, the whole grid synchronised (``cuda.cg.this_grid().sync()``) between steps.

On a GPU the drawn sizes span several blocks, so a kernel that synchronises only its
block (``cuda.syncthreads()``) reads neighbours' cells from the wrong step.  The CUDA
simulator runs one block at a time and cannot synchronise blocks: there a grid sync in a
grid of more than one block fails with one line
(:mod:`pytest_gpucheck.backends.numba.simulator_guard`),
and cross-block synchronisation is a GPU-tier check (``docs/kernels.md``).  The checks
every launch gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_heat_steps_grid_sync = kernel_test("heat_steps_grid_sync", (
    "``steps`` heat steps in one cooperative launch equal ``heat_steps_1d``."))
