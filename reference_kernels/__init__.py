"""NumPy references of the bundled kernels: the executable specification.

Each kernel named in ``docs/kernels.md`` has a reference of the same name in
the module of its family, and an entry in :mod:`pytest_gpucheck.reference_kernels.catalog`
(its contract: arguments, dtypes, in-place or not, tolerance rule, edge
cases).  A reference takes the kernel's inputs minus ``out`` and ``launch``
and *returns* the expected output as a new array (the in-place kernels
return the updated copy and leave their argument alone).
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
from .catalog import CATALOG, CORE_KERNELS, Entry, entry_for

#: Family of each kernel, in the order the contract lists them (read from the catalog).
FAMILIES: dict[str, str] = {name: entry.family for name, entry in CATALOG.items()}

#: Kernel name -> its NumPy reference (read from the catalog).
KERNELS: dict[str, Callable[..., Any]] = {name: entry.reference for name, entry in CATALOG.items()}

__all__ = ["CATALOG", "CORE_KERNELS", "FAMILIES", "KERNELS", "Entry", "cooperative",
           "elementwise", "entry_for", "fused", "indexing", "linalg", "multi_device", "reductions",
           "stencils", "transforms", "ufuncs"]
