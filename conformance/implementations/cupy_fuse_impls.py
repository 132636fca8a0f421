"""CuPy ``cupy.fuse`` implementations of ``saxpy``, ``sigmoid`` and ``sum_of_squares``
(backend ``cupy``, name ``fuse``): the fused elementwise and reduction kernels the
CuPy documentation teaches, checked by the elementwise and reductions suites beside
the ``ElementwiseKernel`` / ``ReductionKernel`` ones.

The fused functions are built on first call (importing this module imports no
CuPy) and kept, as CuPy recommends, so each is compiled once per dtype.  Never
run on a GPU in this project's CI.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

NAME = "fuse"


@functools.cache
def fused() -> dict[str, Any]:
    """The fused functions, by kernel (imports CuPy on first call)."""
    import cupy

    @cupy.fuse(kernel_name="gpucheck_saxpy")
    def saxpy(alpha: Any, x: Any, y: Any) -> Any:
        return alpha * x + y

    @cupy.fuse(kernel_name="gpucheck_sigmoid")
    def sigmoid(x: Any) -> Any:
        return 1 / (1 + cupy.exp(-x))

    @cupy.fuse(kernel_name="gpucheck_sum_of_squares")
    def sum_of_squares(x: Any) -> Any:
        return cupy.sum(x * x)

    return {"saxpy": saxpy, "sigmoid": sigmoid, "sum_of_squares": sum_of_squares}


@implements("saxpy", backend="cupy", name=NAME, origin="bundled")
def saxpy_fuse(alpha: Any, x: Any, y: Any) -> Any:
    """``alpha * x + y`` in one fused elementwise kernel (``alpha`` in ``x``'s dtype)."""
    return fused()["saxpy"](np.dtype(x.dtype).type(alpha), x, y)


@implements("sigmoid", backend="cupy", name=NAME, origin="bundled")
def sigmoid_fuse(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` in one fused elementwise kernel."""
    return fused()["sigmoid"](x)


@implements("sum_of_squares", backend="cupy", name=NAME, origin="bundled")
def sum_of_squares_fuse(x: Any) -> Any:
    """``sum(x * x)`` as one fused map-reduce kernel; CuPy sums integers in 64 bits (NumPy's
    rule), so the total is cast back to ``x``'s dtype and shaped ``(1,)`` as the contract
    asks."""
    return fused()["sum_of_squares"](x).astype(x.dtype).reshape(1)


__all__ = ["NAME", "fused"]
