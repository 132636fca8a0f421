"""NumPy references of the multi-device kernels: the single-device results that a
computation sharded over several devices must reproduce.

``sharded_sum`` is :func:`~pytest_gpucheck.reference_kernels.reductions.sum` (each device sums
its shard, a ``psum`` combines them); ``sharded_heat_step_1d`` is
:func:`~pytest_gpucheck.reference_kernels.stencils.heat_step_1d` (each device updates its
shard after a ``ppermute`` halo exchange with its neighbours).
"""

from __future__ import annotations

import numpy as np

from . import reductions, stencils


def sharded_sum(x: np.ndarray) -> np.ndarray:
    """``[sum(x)]``, shape (1,), as :func:`pytest_gpucheck.reference_kernels.reductions.sum`.

    >>> sharded_sum(np.arange(10, dtype=np.int32))
    array([45], dtype=int32)
    """
    return reductions.sum(x)


def sharded_heat_step_1d(u: np.ndarray, alpha: float) -> np.ndarray:
    """One heat step on the whole domain, as
    :func:`pytest_gpucheck.reference_kernels.stencils.heat_step_1d`.

    >>> sharded_heat_step_1d(np.array([0.0, 1.0, 4.0, 1.0, 0.0]), 0.25)
    array([0. , 1.5, 2.5, 1.5, 0. ])
    """
    return stencils.heat_step_1d(u, alpha)
