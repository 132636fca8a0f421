"""Conformance of the linear algebra: ``matmul`` and the shared-memory tiled ``matmul_tiled``."""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_matmul = kernel_test("matmul", (
    "``out = a @ b`` for non-square shapes (including empty ones), per-element Higham "
    "bound."))

test_matmul_tiled = kernel_test("matmul_tiled", (
    "The tiled kernel on sizes that are not multiples of the tile."))
