"""Conformance of the indexing kernels: global index maps of 1-D/2-D/3-D grids, the grid-stride
loop, and ``transpose``.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_index_map_1d = kernel_test("index_map_1d", (
    "Each element records the global thread index that wrote it; extra threads write "
    "nothing."))

test_index_map_2d = kernel_test("index_map_2d", (
    "Thread (x, y) writes row y, column x of a (usually non-square) output."))

test_index_map_3d = kernel_test("index_map_3d", "Thread (x, y, z) writes ``out[z, y, x]``.")

test_index_map_grid_stride = kernel_test("index_map_grid_stride", (
    "A grid with fewer threads than elements still writes every element once."))

test_transpose = kernel_test("transpose", (
    "``out = a.T`` of non-square, strided or transposed inputs with distinct values."))
