"""CuPy ``cupy.fuse`` implementations of ``fused_saxpy``, ``fused_sigmoid`` and
``fused_sum_of_squares`` (backend ``cupy``, name ``fuse``): the fused elementwise and
reduction kernels the CuPy documentation teaches, checked by the fused suite
(``conformance/test_fused.py``), a row of its own in the matrix.

Every other backend's cell is not applicable, with the reason: only CuPy has a
fusion API that a kernel is written against (``cupy.fuse``).  XLA fuses inside
every ``jax.jit`` and TorchInductor inside ``torch.compile``, but those compile a
whole function; ``jax.jit`` is checked by the elementwise and reductions rows,
and a user's own fused kernel on any backend is checked by this row once
registered.

The fused functions are built on first call (importing this module imports no
CuPy) and kept, as CuPy recommends, so each is compiled once per dtype.  Never
run on a GPU in this project's CI.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

from ._applicability import not_applicable_elsewhere

NAME = "fuse"
KERNELS = ("fused_saxpy", "fused_sigmoid", "fused_sum_of_squares")

#: Why each other backend has no bundled fused kernel.
REASONS = {
    "numpy": "NumPy has no kernel fusion: every operation is its own pass over memory "
             "with its own temporary",
    "numba-cpu": "Numba has no fusion API to write against: an @njit loop is fused by hand "
                 "(the elementwise and reductions rows check those)",
    "numba-cuda": "numba.cuda has no fusion API: a @cuda.jit kernel is fused by hand (the "
                  "elementwise and reductions rows check those)",
    "numba-cudasim": "numba.cuda has no fusion API: a @cuda.jit kernel is fused by hand (the "
                     "elementwise and reductions rows check those)",
    "jax-cpu": "JAX has no fusion API of its own: XLA fuses inside every jax.jit, which the "
               "elementwise and reductions rows check (jax.jit is not cupy.fuse)",
    "jax-gpu": "JAX has no fusion API of its own: XLA fuses inside every jax.jit, which the "
               "elementwise and reductions rows check (jax.jit is not cupy.fuse)",
    "torch-cpu": "torch.compile (TorchInductor) compiles a whole traced function, not a "
                 "fusion API, and is not bundled (it needs a C++ compiler at run time); "
                 "register your own torch.compile kernel for this row",
    "torch-cuda": "torch.compile (TorchInductor) compiles a whole traced function, not a "
                  "fusion API, and is not bundled (it needs Triton at run time); register "
                  "your own torch.compile kernel for this row",
    "cuda-python": "cuda.core compiles the CUDA C you write: fusion is writing one kernel by "
                   "hand (the elementwise and reductions rows check those)",
}


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


@implements("fused_saxpy", backend="cupy", name=NAME, origin="bundled")
def saxpy_fuse(alpha: Any, x: Any, y: Any) -> Any:
    """``alpha * x + y`` in one fused elementwise kernel (``alpha`` in ``x``'s dtype)."""
    return fused()["saxpy"](np.dtype(x.dtype).type(alpha), x, y)


@implements("fused_sigmoid", backend="cupy", name=NAME, origin="bundled")
def sigmoid_fuse(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` in one fused elementwise kernel."""
    return fused()["sigmoid"](x)


@implements("fused_sum_of_squares", backend="cupy", name=NAME, origin="bundled")
def sum_of_squares_fuse(x: Any) -> Any:
    """``sum(x * x)`` as one fused map-reduce kernel; CuPy sums integers in 64 bits (NumPy's
    rule), so the total is cast back to ``x``'s dtype and shaped ``(1,)`` as the contract
    asks."""
    return fused()["sum_of_squares"](x).astype(x.dtype).reshape(1)


not_applicable_elsewhere(KERNELS, ("cupy",), REASONS, default="no fusion API is bundled for "
                         "this backend; register your own fused kernel")

__all__ = ["KERNELS", "NAME", "REASONS", "fused"]
