"""Conformance of the indexing kernels: global index maps of 1-D/2-D/3-D grids, the grid-stride
loop, and ``transpose``.

Each test runs every registered implementation of its kernel (the ``impl``
fixture: ``backend:name``) on hypothesis-drawn cases; the checks every launch
gets are listed in :mod:`pytest_gpucheck.conformance.harness`.
"""

from __future__ import annotations

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation


@pytest.mark.gpu_kernel("index_map_1d")
def test_index_map_1d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Each element records the global thread index that wrote it; extra threads write nothing."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("index_map_2d")
def test_index_map_2d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Thread (x, y) writes row y, column x of a (usually non-square) output."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("index_map_3d")
def test_index_map_3d(impl: Cell, request: pytest.FixtureRequest) -> None:
    """Thread (x, y, z) writes ``out[z, y, x]``."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("index_map_grid_stride")
def test_index_map_grid_stride(impl: Cell, request: pytest.FixtureRequest) -> None:
    """A grid with fewer threads than elements still writes every element once."""
    check_implementation(impl, request)


@pytest.mark.gpu_kernel("transpose")
def test_transpose(impl: Cell, request: pytest.FixtureRequest) -> None:
    """``out = a.T`` of non-square, strided or transposed inputs with distinct values."""
    check_implementation(impl, request)
