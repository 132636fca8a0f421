"""The catalog: one entry per bundled kernel, beside its NumPy reference.

An entry is every fact of a kernel's contract (``docs/kernels.md``) that more
than one part of the project reads: its family and reference, its inputs in
call order, the sizes a returning implementation takes instead of ``out``,
whether it updates an argument in place or must write ``out``, how ``out``
starts, the dtypes it is checked with, the launch domain a ``launch`` covers,
whether its bits may follow the launch, its edge cases (the smallest size it
is defined for, the value classes its boundary sweep draws) and the *name* of
its tolerance rule.  The conformance specs (``conformance/specs/``), the
registration check (``pytest_gpucheck.registry``), the MPI checks, the
benchmarks and the project's tests all read these entries; none keeps its own
copy.

The tolerance rules themselves live in ``pytest_gpucheck.checking.kernel_rules`` (each
rule derives its bound and says why), named here by a string, so this package
imports nothing but NumPy.

Adding a kernel: write its reference in the module of its family, add one
:class:`Entry` below (or in a module of your own, registered with
:func:`add`), then a conformance spec (how to draw its inputs) in
``conformance/``; see ``docs/architecture.md``.

>>> CATALOG["heat_steps_1d"].arguments
('u', 'alpha', 'steps')
>>> CATALOG["add_one_2d"].in_place
'a'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from .value_classes import Exclusion, Parameter

OutputInit = Literal["poison", "zero", "lowest"]
LaunchKind = Literal["1d", "2d", "3d", "grid-stride"]

#: Dtype sets of the contracts.
FLOATS: tuple[str, ...] = ("float32", "float64")
NUMERIC: tuple[str, ...] = ("float32", "float64", "int32", "int64")
INDEX_DTYPES: tuple[str, ...] = ("int32", "int64")

#: Value classes of the boundary sweep (``conformance/specs/base.py`` draws them).  ``specials``
#: (NaN, +-inf) only where IEEE arithmetic defines the result the contract asks for;
#: ``subnormal`` only where the tolerance rule allows flushing; ``fractional``: non-integer
#: floats for the reductions, whose other cases are integer-valued (exact in any order), as
#: only these show an accumulator narrower than the data.  ``one NaN``: a single NaN among
#: finite floats, for the reductions: IEEE makes any sum that meets a NaN NaN, in any order, so
#: a kernel that drops NaN (as ``np.nansum`` does) must be caught; ``specials`` cannot show it,
#: since its +inf and -inf alone already make the sum NaN.  ``out of range``: histogram values
#: below 0 and at or above ``nbins`` (the extremes of the dtype too), which are not counted.
MIXED, NEGATIVE, SUBNORMAL, SPECIALS = "mixed", "all negative", "subnormal", "NaN and inf"
FRACTIONAL, ONE_NAN, OUT_OF_RANGE = "fractional", "one NaN", "out of range"


@dataclass(frozen=True)
class Entry:
    """The contract of one kernel, as every checker of it reads it."""

    name: str
    family: str
    reference: Callable[..., Any]
    #: Inputs in call order (``out`` and ``launch`` are passed by keyword).
    arguments: tuple[str, ...]
    #: Dtypes the kernel is checked with.
    dtypes: tuple[str, ...]
    #: Name of its rule in ``pytest_gpucheck.checking.kernel_rules.RULES``.
    tolerance: str
    #: Name of the argument updated in place (such a kernel takes no ``out``), or None.
    in_place: str | None = None
    #: True when no input sizes the result (index maps): an implementation must take ``out``.
    requires_out: bool = False
    #: Sizes that ``out`` carries, passed by keyword to implementations that return their
    #: result instead (``histogram(x, nbins)``, ``monte_carlo_pi(seed, n, dtype)``).
    sizes: tuple[str, ...] = ()
    #: What ``out`` holds before the call: poison, 0, or the identity of max.
    output_init: OutputInit = "poison"
    #: The launch domain drawn for implementations that take ``launch``.
    launch: LaunchKind = "1d"
    #: 2-D launches with square blocks only (classic shared-memory tiles).
    square_blocks: bool = False
    #: Checked by statistics, not against the reference (``monte_carlo_pi``).
    statistical: bool = False
    #: Each output element is computed the same way whatever the launch, so the same
    #: inputs give the same bits under every launch.  False where the summation order
    #: legitimately follows the blocks (float reductions, shared-memory tiles).
    launch_invariant: bool = True
    #: Edge cases: the smallest size the kernel is defined for (``max`` of nothing is not).
    min_size: int = 0
    #: Edge cases: the value classes of its boundary sweep, beyond mixed signs.
    edge_values: tuple[str, ...] = (NEGATIVE,)
    #: A contract variant (:data:`VARIANTS`): the kernel it varies (``sum`` for ``nansum``),
    #: and which variant it is (``nan``); None and ``""`` for a kernel of its own.
    variant_of: str | None = None
    variant: str = ""
    #: Contract coverage (``value_classes``): the derived value classes this kernel is *not*
    #: tried with, each with the contract's reason (every other class its dtypes and roles
    #: admit is swept, by construction).
    class_exclusions: tuple[Exclusion, ...] = ()
    #: Contract coverage: its scalar parameters (arguments that are not arrays), with the
    #: edges of their domains and their relevance checks (or why none applies).
    parameters: tuple[Parameter, ...] = ()


CATALOG: dict[str, Entry] = {}


def add(entry: Entry) -> Entry:
    """Put ``entry`` in the catalog (a second entry under one name is a mistake).

    A kernel added after the package's import (a project's own, from its
    ``conftest.py``) also appears in the package's ``KERNELS`` and ``FAMILIES``.
    """
    if entry.name in CATALOG and CATALOG[entry.name] != entry:
        raise ValueError(f"the catalog already has a kernel named {entry.name!r}")
    CATALOG[entry.name] = entry
    package = sys.modules.get(__package__ or "")
    for view, value in ((getattr(package, "KERNELS", None), entry.reference),
                        (getattr(package, "FAMILIES", None), entry.family)):
        if view is not None:
            view[entry.name] = value
    return entry


def _entry(family: str, module: str, name: str, arguments: tuple[str, ...],
           dtypes: tuple[str, ...], tolerance: str, **facts: Any) -> None:
    """Add the bundled kernel ``name``, whose reference is in ``reference_kernels.<module>``."""
    reference = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    add(Entry(name, family, reference, arguments, dtypes, tolerance, **facts))


# Scalar parameters (contract coverage, ``value_classes``): the edges of each domain, and
# whether moving the parameter must change the result.
#: ``alpha`` of saxpy: any finite scale; 0 (``out = y``), 1, and the largest drawn.
SAXPY_ALPHA = Parameter("alpha", (0.0, 1.0, 100.0), passed_as="data")
#: ``alpha`` of the heat steps: the explicit scheme is stable for ``0 <= alpha <= 1/2``.
HEAT_ALPHA = Parameter("alpha", (0.0, 0.5), passed_as="data")
#: ``steps``: 0 copies ``u``; each step composes with the next.
STEPS = Parameter("steps", (0, 1, 5))
#: Ghost width: 0 (nothing to exchange) to 3 (the sweep's widest; ``len(a) >= 3 width``).
WIDTH = Parameter("width", (0, 1, 3))
NBINS = Parameter("nbins", (1, 100), no_relevance=(
    "nbins is the length of out (a returning implementation receives it): a result of another "
    "length fails the shape check (T)"))
#: Two seeds at the ends of the drawn range: the samples must differ (a generator that ignores
#: its seed passes every statistical test of one run).
SEED = Parameter("seed", (0, 2**31 - 1))

#: Contract coverage: the classes a kernel's contract leaves undefined, with the reason.
PRODUCT_OVERFLOW = (
    "the products of the dtype's extremes overflow in float32, and the sum then meets +inf and "
    "-inf in an order the contract leaves open (NaN or either infinity; the reference forms "
    "the products in float64)")
MAX_SUBNORMAL = (
    "the contract lets subnormal values be flushed to zero (XLA on the CPU and GPUs in "
    "fast-math mode flush them), and max's rule is exact: a flushed maximum cannot be told "
    "from a wrong one")

# The order is the contract's (docs/kernels.md): the report and the suites list kernels in it.
_ELEMENTWISE_EDGES = (NEGATIVE, SUBNORMAL, SPECIALS)
_entry("elementwise", "elementwise", "vector_add", ("a", "b"), NUMERIC, "correctly_rounded",
       edge_values=_ELEMENTWISE_EDGES)
_entry("elementwise", "elementwise", "saxpy", ("alpha", "x", "y"), FLOATS, "saxpy",
       edge_values=(NEGATIVE, SUBNORMAL), parameters=(SAXPY_ALPHA,))
_entry("elementwise", "elementwise", "sigmoid", ("x",), FLOATS, "sigmoid",
       edge_values=_ELEMENTWISE_EDGES)
_entry("elementwise", "elementwise", "add_one_2d", ("a",), NUMERIC, "correctly_rounded",
       in_place="a", launch="2d", edge_values=(NEGATIVE, SPECIALS))
for _name, _launch in (("index_map_1d", "1d"), ("index_map_2d", "2d"), ("index_map_3d", "3d"),
                       ("index_map_grid_stride", "grid-stride")):
    _entry("indexing", "indexing", _name, (), INDEX_DTYPES, "index", requires_out=True,
           launch=_launch, edge_values=())
_entry("indexing", "indexing", "transpose", ("a",), NUMERIC, "copy", launch="2d",
       edge_values=(NEGATIVE, SPECIALS))
_entry("reductions", "reductions", "sum", ("x",), NUMERIC, "sum", output_init="zero",
       launch_invariant=False, edge_values=(NEGATIVE, SUBNORMAL, FRACTIONAL, ONE_NAN))
for _name, _arguments in (("dot", ("x", "y")), ("weighted_sum", ("x", "w")),
                          ("sum_of_squares", ("x",))):
    _entry("reductions", "reductions", _name, _arguments, NUMERIC, _name, output_init="zero",
           launch_invariant=False, edge_values=(NEGATIVE, FRACTIONAL, ONE_NAN),
           class_exclusions=() if len(_arguments) == 1 else (
               Exclusion("*", "float extremes", PRODUCT_OVERFLOW),))
_entry("reductions", "reductions", "max", ("x",), NUMERIC, "max", output_init="lowest",
       min_size=1, class_exclusions=(Exclusion("x", "subnormal", MAX_SUBNORMAL),))
_entry("reductions", "reductions", "histogram", ("x",), INDEX_DTYPES, "counts",
       output_init="zero", sizes=("nbins",), edge_values=(OUT_OF_RANGE,), parameters=(NBINS,))
_entry("reductions", "reductions", "monte_carlo_pi", ("seed",), FLOATS, "statistical",
       statistical=True, sizes=("n", "dtype"), launch_invariant=False, edge_values=(),
       parameters=(SEED,))
_entry("stencils", "stencils", "heat_step_1d", ("u", "alpha"), FLOATS, "heat_step",
       edge_values=(NEGATIVE, SUBNORMAL), parameters=(HEAT_ALPHA,))
_entry("stencils", "stencils", "heat_steps_1d", ("u", "alpha", "steps"), FLOATS, "heat_steps",
       parameters=(HEAT_ALPHA, STEPS))
_entry("stencils", "stencils", "laplacian_2d", ("u",), FLOATS, "laplacian_2d", launch="2d",
       edge_values=(NEGATIVE, SUBNORMAL))
# The halo exchanges are stencil-shaped code, so they live in ``stencils``.
for _name, _launch in (("halo_exchange_1d", "1d"), ("halo_exchange_2d", "2d")):
    _entry("halos", "stencils", _name, ("a", "width"), NUMERIC, "copy", in_place="a",
           launch=_launch, parameters=(WIDTH,))
_entry("linalg", "linalg", "matmul", ("a", "b"), NUMERIC, "matmul", launch="2d",
       edge_values=(NEGATIVE, SUBNORMAL))
_entry("linalg", "linalg", "matmul_tiled", ("a", "b"), NUMERIC, "matmul", launch="2d",
       square_blocks=True, launch_invariant=False, edge_values=(NEGATIVE, SUBNORMAL))

#: The kernels of the families above: every framework's main implementation module
#: covers these (or says why not); the families below have modules of their own.
CORE_KERNELS: tuple[str, ...] = tuple(CATALOG)

_entry("ufuncs", "ufuncs", "ufunc_saxpy", ("alpha", "x", "y"), FLOATS, "ufunc_saxpy",
       launch="2d", parameters=(SAXPY_ALPHA,))
_entry("ufuncs", "ufuncs", "gufunc_dot", ("x", "y"), NUMERIC, "gufunc_dot")
_entry("ufuncs", "ufuncs", "gufunc_laplacian_2d", ("u",), FLOATS, "gufunc_laplacian_2d",
       launch="3d")
_entry("transforms", "transforms", "grad_sum_of_squares", ("x",), FLOATS, "grad_sum_of_squares")
_entry("transforms", "transforms", "grad_weighted_sum", ("x", "w"), FLOATS, "grad_weighted_sum")
_entry("transforms", "transforms", "grad_sigmoid", ("x",), FLOATS, "grad_sigmoid")
_entry("transforms", "transforms", "grad_heat_step_1d", ("u", "alpha", "g"), FLOATS,
       "grad_heat_step_1d", parameters=(HEAT_ALPHA,))
_entry("transforms", "transforms", "vmap_saxpy", ("alpha", "x", "y"), FLOATS, "vmap_saxpy",
       launch="2d", parameters=(SAXPY_ALPHA,))
# Sharded and grid-synchronised kernels reproduce their single-device counterparts, so
# they share those counterparts' inputs and rules.
_entry("multi-device", "multi_device", "sharded_sum", ("x",), NUMERIC, "sum", output_init="zero")
_entry("multi-device", "multi_device", "sharded_heat_step_1d", ("u", "alpha"), FLOATS,
       "heat_step", parameters=(HEAT_ALPHA,))
_entry("grid-sync", "cooperative", "heat_steps_grid_sync", ("u", "alpha", "steps"), FLOATS,
       "heat_steps", parameters=(HEAT_ALPHA, STEPS))
# A fused kernel (``cupy.fuse``) meets its unfused kernel's whole contract under its own name
# (fusion changes how the kernel is built, not what it computes), in a row of its own.
for _unfused in ("saxpy", "sigmoid", "sum_of_squares"):
    add(replace(CATALOG[_unfused], name=f"fused_{_unfused}", family="fused",
                reference=getattr(importlib.import_module(f"{__package__}.fused"),
                                  f"fused_{_unfused}")))


#: The kernels this package ships (suites of their own in ``conformance/``); any other entry
#: is a project's own, checked by ``conformance/test_catalog_kernels.py``.
BUNDLED: frozenset[str] = frozenset(CATALOG)


#: Contract variants: kernels that differ from a catalog kernel in one stated clause, by
#: name.  ``nan``: the NaN-ignoring variant of a float reduction (``nansum`` of ``sum``), whose
#: reference is NumPy's ``nan*`` function (``np.nansum``, ``np.nanmax``; ``np.nansum`` of the
#: products for ``dot``, ``weighted_sum``, ``sum_of_squares``): NaN elements (or NaN products)
#: are left out, a NaN does not propagate.  Packages ship both families (numbagg's
#: ``nansum`` skips NaN by design where ``sum``'s contract propagates it).  The rest of the
#: contract is the kernel's: arguments, dtypes, ``out`` and its start, launch, the sweep's
#: value classes (``one NaN`` is where the variant differs).  A variant enters the catalog
#: when an implementation of it is registered (:func:`resolve`), so a run without one has
#: the same items as before; the suites check it as a kernel a project adds
#: (``conformance/test_catalog_kernels.py``), under its own name.
VARIANT_KINDS: dict[str, str] = {
    "nan": "NaN-ignoring: NaN elements are left out, as NumPy's nan* functions do",
}
VARIANTS: dict[str, Entry] = {}
for _base, _rule in (("sum", "nansum"), ("dot", "nandot"), ("weighted_sum", "nanweighted_sum"),
                     ("sum_of_squares", "nansum_of_squares"), ("max", "max")):
    _name = f"nan{_base}"
    VARIANTS[_name] = replace(
        CATALOG[_base], name=_name, tolerance=_rule, variant_of=_base, variant="nan",
        reference=getattr(importlib.import_module(f"{__package__}.reductions"), _name),
        edge_values=tuple(dict.fromkeys((*CATALOG[_base].edge_values, ONE_NAN))))


def variant_name(kernel: str, variant: str) -> str:
    """The name of ``kernel``'s ``variant`` (``nansum`` for ``("sum", "nan")``); a one-line
    error names the variants there are."""
    for name, entry in VARIANTS.items():
        if entry.variant_of == kernel and entry.variant == variant:
            return name
    offered = ", ".join(f"{entry.variant_of} variant={entry.variant!r} ({name})"
                        for name, entry in VARIANTS.items())
    raise KeyError(f"{kernel!r} has no variant {variant!r}; the variants are: {offered}")


def resolve(kernel: str) -> Entry | None:
    """The catalog entry of ``kernel``, a variant's being added to the catalog on first use
    (registering its implementation); None for a kernel neither has."""
    if kernel in CATALOG:
        return CATALOG[kernel]
    if kernel in VARIANTS:
        return add(VARIANTS[kernel])
    return None


def entry_for(kernel: str) -> Entry:
    """The catalog entry of ``kernel``; a one-line error names the known kernels."""
    entry = resolve(kernel)
    if entry is None:
        raise KeyError(f"no catalog entry for kernel {kernel!r}; "
                       f"known: {', '.join(CATALOG)}")
    return entry


__all__ = ["BUNDLED", "CATALOG", "CORE_KERNELS", "FLOATS", "INDEX_DTYPES", "NUMERIC",
           "VARIANTS", "VARIANT_KINDS", "Entry", "add", "entry_for", "resolve", "variant_name"]
