"""NumPy references of the fused kernels: ``fused_saxpy``, ``fused_sigmoid`` and
``fused_sum_of_squares``, what a fusion API (CuPy's ``cupy.fuse``) compiles into one
kernel.  Fusing changes how a kernel is built, not what it computes, so each
reference is the unfused kernel's (:mod:`pytest_gpucheck.reference_kernels.elementwise`,
:mod:`pytest_gpucheck.reference_kernels.reductions`); the family is its own row of the matrix
so that a fused kernel's verdict is not hidden among the plain kernels'.
"""

from __future__ import annotations

import numpy as np

from . import elementwise, reductions


def fused_saxpy(alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``alpha * x + y`` as :func:`pytest_gpucheck.reference_kernels.elementwise.saxpy`.

    >>> fused_saxpy(2.0, np.array([1.0, 2.0], np.float32), np.array([0.5, 0.5], np.float32))
    array([2.5, 4.5], dtype=float32)
    """
    return elementwise.saxpy(alpha, x, y)


def fused_sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` as :func:`pytest_gpucheck.reference_kernels.elementwise.sigmoid`.

    >>> fused_sigmoid(np.array([0.0, 100.0, -800.0]))
    array([0.5, 1. , 0. ])
    """
    return elementwise.sigmoid(x)


def fused_sum_of_squares(x: np.ndarray) -> np.ndarray:
    """``[sum(x * x)]`` in ``x``'s dtype, as
    :func:`pytest_gpucheck.reference_kernels.reductions.sum_of_squares`.

    >>> fused_sum_of_squares(np.array([1, 2, 3], np.int32))
    array([14], dtype=int32)
    """
    return reductions.sum_of_squares(x)
