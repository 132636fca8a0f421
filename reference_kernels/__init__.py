"""NumPy references of the bundled kernels: the executable specification.

Each kernel named in ``docs/kernels.md`` has a reference of the same name in
the module of its family.  A reference takes the kernel's inputs minus
``out`` and ``launch`` and *returns* the expected output as a new array (the
in-place kernels return the updated copy and leave their argument alone).
Index-map kernels, whose only argument is ``out``, take the output ``shape``
instead; ``histogram`` takes ``(x, nbins)``; ``monte_carlo_pi`` estimates pi
from the kernel's samples (its contract is statistical).

>>> import numpy as np
>>> KERNELS["vector_add"](np.array([1.0]), np.array([2.0]))
array([3.])
>>> FAMILIES["halo_exchange_2d"]
'halos'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import (
    cooperative,
    elementwise,
    fused,
    indexing,
    linalg,
    multi_device,
    reductions,
    stencils,
    transforms,
    ufuncs,
)

#: Family of each kernel, in the order the contract lists them.
FAMILIES: dict[str, str] = {
    "vector_add": "elementwise",
    "saxpy": "elementwise",
    "sigmoid": "elementwise",
    "add_one_2d": "elementwise",
    "index_map_1d": "indexing",
    "index_map_2d": "indexing",
    "index_map_3d": "indexing",
    "index_map_grid_stride": "indexing",
    "transpose": "indexing",
    "sum": "reductions",
    "dot": "reductions",
    "max": "reductions",
    "weighted_sum": "reductions",
    "sum_of_squares": "reductions",
    "histogram": "reductions",
    "monte_carlo_pi": "reductions",
    "heat_step_1d": "stencils",
    "heat_steps_1d": "stencils",
    "laplacian_2d": "stencils",
    "halo_exchange_1d": "halos",
    "halo_exchange_2d": "halos",
    "matmul": "linalg",
    "matmul_tiled": "linalg",
}

# The halo exchanges are stencil-shaped code, so they live in ``stencils``.
_MODULE_OF_FAMILY = {
    "elementwise": elementwise,
    "indexing": indexing,
    "reductions": reductions,
    "stencils": stencils,
    "halos": stencils,
    "linalg": linalg,
}

#: Kernel name -> its NumPy reference.
KERNELS: dict[str, Callable[..., Any]] = {
    name: getattr(_MODULE_OF_FAMILY[family], name) for name, family in FAMILIES.items()
}

#: The kernels of the families above: every framework's main implementation module
#: covers these (or says why not); the families below have modules of their own.
CORE_KERNELS: tuple[str, ...] = tuple(FAMILIES)

# Families whose module lists its own kernels (a ``FAMILIES`` table of the module).
for _module in (ufuncs, transforms, multi_device, cooperative, fused):
    for _name, _family in _module.FAMILIES.items():
        FAMILIES[_name] = _family
        KERNELS[_name] = getattr(_module, _name)

__all__ = ["CORE_KERNELS", "FAMILIES", "KERNELS", "cooperative", "elementwise", "fused",
           "indexing", "linalg", "multi_device", "reductions", "stencils", "transforms",
           "ufuncs"]
