"""NumPy reference of the cooperative kernel ``heat_steps_grid_sync``: ``steps`` heat
steps computed by one kernel launch that synchronises the whole grid
(``cuda.cg.this_grid().sync()``) between steps.  The result is
:func:`~pytest_gpucheck.reference_kernels.stencils.heat_steps_1d`'s.
"""

from __future__ import annotations

import numpy as np

from . import stencils


def heat_steps_grid_sync(u: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """``steps`` heat steps, walls held at 0, as
    :func:`pytest_gpucheck.reference_kernels.stencils.heat_steps_1d`.

    >>> heat_steps_grid_sync(np.array([0.0, 1.0, 4.0, 1.0, 0.0]), 0.25, 2)
    array([0.   , 1.375, 2.   , 1.375, 0.   ])
    """
    return stencils.heat_steps_1d(u, alpha, steps)
