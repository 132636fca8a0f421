"""One :class:`KernelSpec` per bundled kernel: inputs, reference, tolerance, output rules.

A spec says how to draw a problem for a backend (a hypothesis strategy of
:class:`Case`), how the reference computes the expected result, which derived
tolerance applies, how the output starts (poison, zero, the reduction's
identity), whether the kernel updates an argument in place, which launch
domain a ``launch`` argument covers, and whether the contract is statistical.
The contract facts (argument names and order, dtypes, in-place argument,
output start, launch domain, edge cases, tolerance rule) are read from the
kernel's entry in :mod:`pytest_gpucheck.reference_kernels.catalog`; a spec adds only how to
draw problems for it (hypothesis strategies and the boundary sweep).

One module per family, as in ``reference_kernels/`` (``elementwise``, ``indexing``,
``reductions``, ``stencils`` with the halo exchanges, ``linalg``, ``ufuncs``,
``transforms``, ``multi_device`` with the cooperative kernel, ``fused``), each with
its ``SPECS`` table; what they are made of is in :mod:`.base`.  This face joins the
tables (:data:`SPECS`) and finds a kernel's spec (:func:`spec_for`).
"""

from __future__ import annotations

import importlib

from pytest_gpucheck.checking.kernel_rules import HEAT_OPS, SIGMOID_ULPS
from pytest_gpucheck.conformance.specs.base import (
    Case,
    CaseDraw,
    Edge,
    KernelSpec,
    LargeBuild,
    SweepBuild,
    edge_vectors,
    large_1d,
    sweep_1d,
    vectors_cases,
)
from pytest_gpucheck.reference_kernels.catalog import FLOATS, INDEX_DTYPES, NUMERIC

#: The family modules, in the order of the table (each has a ``SPECS`` table).
FAMILY_SPEC_MODULES = tuple(f"pytest_gpucheck.conformance.specs.{family}" for family in (
    "elementwise", "indexing", "reductions", "stencils", "linalg", "ufuncs", "transforms",
    "multi_device", "fused"))

SPECS: dict[str, KernelSpec] = {}
for _module in FAMILY_SPEC_MODULES:
    SPECS.update(importlib.import_module(_module).SPECS)


def spec_for(kernel: str) -> KernelSpec:
    """The spec of ``kernel``: its own, or for a kernel the catalog has and no spec module
    covers, the one that draws every argument as a 1-D array of one size and dtype; a
    one-line error names the known kernels."""
    if kernel in SPECS:
        return SPECS[kernel]
    from pytest_gpucheck.reference_kernels import CATALOG
    from pytest_gpucheck.reference_kernels.catalog import resolve

    entry = resolve(kernel)
    if entry is not None and entry.variant_of in SPECS:
        # A contract variant (nansum) draws its kernel's problems; its entry (read by the
        # spec's name) adds the value classes where it differs (one NaN).
        base = SPECS[entry.variant_of]
        return KernelSpec(kernel, base.draw, base.sweep, base.large)
    if kernel in CATALOG:
        return KernelSpec(kernel, vectors_cases, sweep_1d(edge_vectors), large_1d(edge_vectors))
    raise KeyError(f"no conformance spec for kernel {kernel!r}; "
                   f"known: {', '.join(CATALOG)}")


__all__ = ["FLOATS", "HEAT_OPS", "INDEX_DTYPES", "NUMERIC", "SIGMOID_ULPS", "SPECS", "Case",
           "CaseDraw", "Edge", "KernelSpec", "LargeBuild", "SweepBuild", "spec_for"]
