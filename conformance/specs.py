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
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.checking.assertions import show_values
from pytest_gpucheck.checking.kernel_rules import HEAT_OPS, SIGMOID_ULPS, rule_for
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.reference_kernels.catalog import (
    FLOATS,
    FRACTIONAL,
    INDEX_DTYPES,
    MIXED,
    NEGATIVE,
    NUMERIC,
    ONE_NAN,
    OUT_OF_RANGE,
    SPECIALS,
    SUBNORMAL,
    Entry,
    LaunchKind,
    OutputInit,
    entry_for,
)


@dataclass(frozen=True)
class Case:
    """One drawn problem: the kernel's inputs (host arrays and scalars) by argument name."""

    inputs: dict[str, Any]
    #: A few words for messages: ``n=7, dtype=float32``.
    describe: str
    #: Shape (C order) the threads of a ``launch`` cover.
    domain: tuple[int, ...]
    #: Extra arguments of the reference beyond the kernel's inputs (index maps: shape, dtype).
    reference_args: tuple[Any, ...] = ()

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.inputs.items() if isinstance(v, np.ndarray)}

    def __repr__(self) -> str:
        # Hypothesis prints the failing draw with this: small arrays whole, large ones
        # summarised (whole, a 127-element draw took 35 lines of the failure).
        shown = ", ".join(f"{name}={show_values(value)}" if isinstance(value, np.ndarray)
                          else f"{name}={value!r}" for name, value in self.inputs.items())
        return f"Case({self.describe}: {shown})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis' pretty printer would list the fields (and whole arrays) itself."""
        printer.text(repr(self))


@dataclass(frozen=True)
class Edge:
    """One case of the boundary sweep, which runs before the random search."""

    #: What the case is there for: ``n = block + 1``, ``all negative``, ``NaN and inf``.
    what: str
    case: Case
    #: The layout of every array input (contiguous, strided or, for 2-D, transposed).
    layout: str = gst.CONTIGUOUS


#: Draws the problems of a kernel, given the sizing and its catalog entry.
CaseDraw = Callable[[Sizing, Entry], st.SearchStrategy[Case]]
#: Builds the boundary sweep of a kernel, given the sizing and its catalog entry.
SweepBuild = Callable[[Sizing, Entry], list[Edge]]
#: Builds the repeat check's case of a kernel: ``large(sizing, entry, dtype, value_class, rng)``.
LargeBuild = Callable[[Sizing, Entry, np.dtype, str, np.random.Generator], Case]


@dataclass(frozen=True)
class KernelSpec:
    """What the suite needs to know to check any implementation of one kernel: how to
    draw its problems, and (from its catalog entry) everything its contract says."""

    name: str
    #: Hypothesis strategy of the kernel's problems (:meth:`cases`).
    draw: CaseDraw
    #: The boundary sweep: deterministic edge cases every backend runs first (:meth:`edges`).
    sweep: SweepBuild | None = None
    #: The repeat check's large case (:meth:`repeat_cases`).
    large: LargeBuild | None = None

    @property
    def entry(self) -> Entry:
        """The kernel's catalog entry: the contract this spec draws problems for."""
        return entry_for(self.name)

    def cases(self, sizing: Sizing) -> st.SearchStrategy[Case]:
        """The strategy of drawn problems for ``sizing``."""
        return self.draw(sizing, self.entry)

    def edges(self, sizing: Sizing) -> list[Edge]:
        """The boundary sweep for ``sizing`` (empty when the kernel has none)."""
        return self.sweep(sizing, self.entry) if self.sweep is not None else []

    def repeat_cases(self, sizing: Sizing) -> list[Case]:
        """The repeat check's cases: one at the sizing's repeat size in the entry's first
        integer dtype (exact by contract: two runs must give the same bits), else its first
        float dtype; and for a kernel whose float result may follow the schedule (the float
        reductions, tiled matmul), one of fractional floats too, whose spread is reported.
        None for a statistical kernel (its samples are judged by statistics)."""
        if self.large is None or self.statistical:
            return []
        entry = self.entry
        integers = [d for d in entry.dtypes if np.dtype(d).kind in "iu"]
        floats = [d for d in entry.dtypes if np.dtype(d).kind == "f"]
        chosen = [(integers[0], MIXED)] if integers else [(floats[0], MIXED)] if floats else []
        if integers and floats and not entry.launch_invariant:
            chosen.append((floats[0], FRACTIONAL))
        rng = np.random.default_rng(_SWEEP_SEED + 1)
        return [self.large(sizing, entry, np.dtype(name), kind, rng) for name, kind in chosen]

    @property
    def family(self) -> str:
        return self.entry.family

    @property
    def reference(self) -> Callable[..., Any]:
        return self.entry.reference

    @property
    def arguments(self) -> tuple[str, ...]:
        """Input arguments in call order (``out`` and ``launch`` are passed by keyword)."""
        return self.entry.arguments

    @property
    def rule(self) -> Callable[[Case, np.ndarray], tol.Tolerance]:
        """Derived tolerance for a case and its expected result (the entry's named rule)."""
        named = rule_for(self.entry.tolerance)
        return lambda case, expected: named(case.inputs, expected)

    @property
    def output_init(self) -> OutputInit:
        return self.entry.output_init

    @property
    def in_place(self) -> str | None:
        """Name of the argument updated in place (``a``), or None."""
        return self.entry.in_place

    @property
    def launch(self) -> LaunchKind:
        """The launch drawn for implementations that take ``launch``."""
        return self.entry.launch

    @property
    def square_blocks(self) -> bool:
        return self.entry.square_blocks

    @property
    def statistical(self) -> bool:
        """True for monte_carlo_pi: checked by statistics, not against a reference."""
        return self.entry.statistical

    @property
    def requires_out(self) -> bool:
        """Kernels whose only argument is ``out`` (index maps) cannot return a result."""
        return self.entry.requires_out

    @property
    def size_arguments(self) -> tuple[str, ...]:
        """Sizes passed by keyword to implementations that return their result."""
        return self.entry.sizes

    @property
    def launch_invariant(self) -> bool:
        """The same inputs give the same bits under every launch."""
        return self.entry.launch_invariant

    def expected(self, case: Case) -> np.ndarray:
        """The reference's result for ``case`` (a new host array)."""
        # Copies: the inputs must reach the implementation exactly as drawn, even if
        # a reference were to modify its arguments.
        args = [np.copy(v) if isinstance(v, np.ndarray) else v
                for v in (case.inputs[name] for name in self.arguments)]
        args += list(case.reference_args)
        return np.asarray(self.reference(*args))

    def result_template(self, case: Case) -> np.ndarray:
        """An array of the result's shape and dtype (the reference's, or for the
        statistical monte_carlo_pi: ``(n, 2)`` samples of the drawn float dtype)."""
        if self.statistical:
            return np.zeros((int(case.inputs["n"]), 2), dtype=case.inputs["dtype"])
        return self.expected(case)

    def initial_output(self, dtype: np.dtype) -> Any:
        """What ``out`` holds before the call: poison, 0, or the identity of max."""
        from pytest_gpucheck.checking.guards import poison_value

        if self.output_init == "zero":
            return np.zeros((), dtype=dtype)
        if self.output_init == "lowest":
            return np.array(-np.inf if dtype.kind == "f" else np.iinfo(dtype).min, dtype=dtype)
        return poison_value(dtype)


# -- value strategies -----------------------------------------------------------------------

def _elements(dtype: np.dtype, bound: float) -> st.SearchStrategy[Any]:
    """Finite floats in [-bound, bound], or integers in that range for integer dtypes."""
    if dtype.kind == "f":
        return gst.finite_floats(dtype, bound)
    return gst.integer_valued(dtype, -int(bound), int(bound))


def _one_kind(dtype: np.dtype, exact_bound: int, float_bound: float) -> st.SearchStrategy[
        st.SearchStrategy[Any]]:
    """Pick, per example, either integer-valued or general elements for the whole array."""
    choices = [gst.nonzero_integer_valued(dtype, exact_bound)]
    if dtype.kind == "f":
        choices.append(gst.finite_floats(dtype, float_bound))
    return st.sampled_from(choices)


# -- elementwise ------------------------------------------------------------------------------


def _vector_add_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing))
        bound = 2**30 if dtype == np.int32 else 2**61 if dtype == np.int64 else 1e30
        a = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        b = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}", (n,))

    return draw()


def _saxpy_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing))
        alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
        x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        y = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        return Case({"alpha": alpha, "x": x, "y": y},
                    f"n={n}, dtype={dtype}, alpha={float(alpha)!r}", (n,))

    return draw()


def _sigmoid_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing))
        # +-120 covers both saturations (exp overflows beyond ~88 in float32).
        x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 120.0)))
        return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))

    return draw()


def _add_one_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        shape = draw(gst.shapes_2d(sizing))
        a = draw(gst.arrays(dtype, shape, _elements(dtype, 2**20)))
        return Case({"a": a}, f"shape={shape}, dtype={dtype}", shape)

    return draw()


# -- indexing ---------------------------------------------------------------------------------

def _index_map_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    """Output shapes of the entry's launch domain (the index map's only argument is ``out``)."""
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        if entry.launch == "2d":
            shape: tuple[int, ...] = draw(gst.shapes_2d(sizing))
        elif entry.launch == "3d":
            shape = draw(gst.shapes_3d(sizing))
        else:
            shape = (draw(gst.sizes(sizing)),)
        return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))

    return draw()


def _transpose_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        shape = draw(gst.shapes_2d(sizing))
        a = draw(gst.distinct_values(dtype, shape))
        return Case({"a": a}, f"shape={shape}, dtype={dtype}", (shape[1], shape[0]))

    return draw()


# -- reductions -------------------------------------------------------------------------------

#: Integer-valued inputs up to these magnitudes keep every sum below 2**24 for the
#: largest bucket size (1031 elements): exact in float32 in any order.
SUM_EXACT_BOUND = 2**12
PRODUCT_EXACT_BOUND = 2**6


def _reduction_cases(exact_bound: int) -> CaseDraw:
    def cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*entry.dtypes))
            n = draw(gst.sizes(sizing, min_size=entry.min_size))
            elements = draw(_one_kind(dtype, exact_bound, 1e3))
            inputs = {name: draw(gst.arrays(dtype, n, elements)) for name in entry.arguments}
            return Case(inputs, f"n={n}, dtype={dtype}", (n,))

        return draw()

    return cases


def _max_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing, min_size=entry.min_size))
        bound = 1e30 if dtype.kind == "f" else np.iinfo(dtype).max
        x = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))

    return draw()


HISTOGRAM_BINS = (1, 2, 7, 32, 33, 100)


def _histogram_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing))
        nbins = draw(st.sampled_from(HISTOGRAM_BINS))
        # Mostly inside [0, nbins), a few values outside, which must not be counted.
        x = draw(gst.arrays(dtype, n, gst.integer_valued(dtype, -2, nbins + 1)))
        return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}", (n,),
                    (nbins,))

    return draw()


def _monte_carlo_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(st.sampled_from(sizing.samples))
        seed = draw(st.integers(0, 2**31 - 1))
        return Case({"seed": seed, "n": n, "dtype": dtype}, f"n={n}, seed={seed}, dtype={dtype}",
                    (n,))

    return draw()


# -- stencils ---------------------------------------------------------------------------------

ALPHAS = (0.1, 0.25, 0.4, 0.5)
STEPS = (0, 1, 2, 5)


def _heat_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    """``u`` and ``alpha``, and ``steps`` or ``g`` where the entry takes them."""
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing))
        alpha = dtype.type(draw(st.sampled_from(ALPHAS)))
        u = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        inputs: dict[str, Any] = {"u": u, "alpha": alpha}
        text = f"n={n}, dtype={dtype}, alpha={float(alpha)}"
        if "steps" in entry.arguments:
            inputs["steps"] = draw(st.sampled_from(STEPS))
            text += f", steps={inputs['steps']}"
        if "g" in entry.arguments:  # the cotangent of the heat step's gradient
            inputs["g"] = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        return Case(inputs, text, (n,))

    return draw()


def _laplacian_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        shape = draw(gst.shapes_2d(sizing))
        u = draw(gst.arrays(dtype, shape, gst.finite_floats(dtype, 1e3)))
        return Case({"u": u}, f"shape={shape}, dtype={dtype}", shape)

    return draw()


# -- halos ------------------------------------------------------------------------------------

HALO_WIDTHS = (0, 1, 2, 3)


def _halo_cases(ndim: int) -> CaseDraw:
    def cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*entry.dtypes))
            width = draw(st.sampled_from(HALO_WIDTHS if ndim == 1 else HALO_WIDTHS[:3]))
            # Interiors from the bucket (at least the width, so both sources exist).
            if ndim == 1:
                inner: tuple[int, ...] = (draw(gst.sizes(sizing, min_size=max(width, 1))),)
            else:
                inner = draw(gst.shapes_2d(sizing, min_side=max(width, 1)))
            shape = tuple(n + 2 * width for n in inner)
            # Distinct interior values and ghost cells holding 0 (never an interior
            # value): a ghost filled from the wrong cell, or not at all, is visible.
            a = draw(gst.distinct_values(dtype, shape))
            if width:
                for axis in range(ndim):
                    ghost = [slice(None)] * ndim
                    ghost[axis] = slice(0, width)
                    a[tuple(ghost)] = 0
                    ghost[axis] = slice(-width, None)
                    a[tuple(ghost)] = 0
            return Case({"a": a, "width": width}, f"shape={shape}, width={width}, dtype={dtype}",
                        shape)

        return draw()

    return cases


# -- linalg -----------------------------------------------------------------------------------


def _matmul_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        m, k, n = draw(gst.matmul_shapes(sizing))
        elements = draw(_one_kind(dtype, 2**5, 1.0))
        a = draw(gst.arrays(dtype, (m, k), elements))
        b = draw(gst.arrays(dtype, (k, n), elements))
        return Case({"a": a, "b": b}, f"({m}, {k}) @ ({k}, {n}), dtype={dtype}", (m, n))

    return draw()


# -- the boundary sweep -----------------------------------------------------------------------
#
# Edge cases derived from each contract, run on every backend before hypothesis
# explores: the sizes around the sweep block, shapes with every axis distinct,
# empty inner dimensions, ghost widths 1 to 3, and value classes that random
# finite in-range draws rarely produce.  Deterministic (a fixed seed), so the
# derandomized ``ci`` profile meets every class on every run.

# The value classes (MIXED, NEGATIVE, ...) and which of them each kernel's sweep draws
# (``Entry.edge_values``) are contract facts: they live in the catalog.
_FLOAT_ONLY = (SUBNORMAL, SPECIALS, FRACTIONAL, ONE_NAN)
_LAYOUTS_1D = (gst.CONTIGUOUS, gst.STRIDED)
_LAYOUTS_2D = (gst.CONTIGUOUS, gst.STRIDED, gst.TRANSPOSED)
_SWEEP_SEED = 20240611


def _values(shape: tuple[int, ...], dtype: np.dtype, kind: str, bound: float,
            rng: np.random.Generator, *, integers: bool = False) -> np.ndarray:
    """An array of one value class.  ``integers``: integer-valued, non-zero (exact sums)."""
    size = int(np.prod(shape, dtype=np.int64))
    if kind == SUBNORMAL:
        tiny = float(np.finfo(dtype).smallest_subnormal)
        values = rng.integers(1, 2**10, size) * tiny * rng.choice([-1.0, 1.0], size)
        return values.astype(dtype).reshape(shape)
    if integers or dtype.kind != "f":
        values = rng.integers(1, max(2, int(bound)) + 1, size).astype(np.float64)
    else:
        values = rng.uniform(bound / 1e3, bound, size)
    if kind == NEGATIVE:
        values = -values
    elif kind in (MIXED, SPECIALS):
        values = values * rng.choice([-1.0, 1.0], size)
    result = values.astype(dtype)
    if kind == SPECIALS:
        flat = result.reshape(-1)
        for i, special in enumerate((np.nan, np.inf, -np.inf)):
            flat[(3 * i + 1) % size] = special  # spread out, inside every size >= 1
    elif kind == ONE_NAN and size:
        result.reshape(-1)[size // 2] = np.nan  # the rest stay finite: only NaN can make NaN
    return result.reshape(shape)


#: Makes one edge case: ``make(entry, n_or_shape, dtype, value_class, rng)``.
EdgeMaker = Callable[[Entry, Any, np.dtype, str, np.random.Generator], Case]


def _sweep_1d(make: EdgeMaker) -> SweepBuild:
    """Every sweep size from the entry's ``min_size`` (its dtypes and layouts taken in turn),
    then each of its value classes at ``block + 1`` elements, once per float dtype where it
    concerns floats only."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        dtypes, kinds = entry.dtypes, entry.edge_values
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        sizes = [n for n in sizing.sweep_sizes if n >= entry.min_size]
        for i, n in enumerate(sizes):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            found.append(Edge(f"n={n}", make(entry, n, dtype, MIXED, rng), _LAYOUTS_1D[i % 2]))
        n = sizing.sweep_block + 1
        for kind in kinds:
            floats = kind in _FLOAT_ONLY
            for name in dict.fromkeys(d for d in dtypes if not floats or d in FLOATS):
                if kind == NEGATIVE and name not in (dtypes[0], dtypes[-1]):
                    continue  # one float and one integer dtype are enough for signs
                found.append(Edge(kind, make(entry, n, np.dtype(name), kind, rng)))
        return found

    return edges


def _sweep_shapes(shapes: Callable[[Sizing], tuple[tuple[int, ...], ...]],
                  make: EdgeMaker) -> SweepBuild:
    """Every sweep shape (the entry's dtypes and layouts in turn), then each of its value
    classes on the last (largest) shape."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        dtypes, kinds = entry.dtypes, entry.edge_values
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        every = shapes(sizing)
        for i, shape in enumerate(every):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            layout = _LAYOUTS_2D[i % 3] if len(shape) == 2 else gst.CONTIGUOUS
            found.append(Edge(f"shape={shape}", make(entry, shape, dtype, MIXED, rng), layout))
        for kind in kinds:
            floats = kind in _FLOAT_ONLY
            name = next(d for d in dtypes if not floats or d in FLOATS)
            found.append(Edge(kind, make(entry, every[-1], np.dtype(name), kind, rng)))
        return found

    return edges


def _edge_vector_add(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                     rng: np.random.Generator) -> Case:
    a = _values((n,), dtype, kind, 2**20, rng)
    b = _values((n,), dtype, kind if kind != SPECIALS else MIXED, 2**20, rng)
    return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_saxpy(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                rng: np.random.Generator) -> Case:
    alpha = dtype.type(-1.5)
    x, y = (_values((n,), dtype, kind, 1e3, rng) for _ in range(2))
    return Case({"alpha": alpha, "x": x, "y": y}, f"n={n}, dtype={dtype}, alpha=-1.5, {kind}",
                (n,))


def _edge_sigmoid(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    x = _values((n,), dtype, kind, 120.0, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_reduction(bound: int) -> EdgeMaker:
    def make(entry: Entry, n: int, dtype: np.dtype, kind: str,
             rng: np.random.Generator) -> Case:
        # ONE_NAN: integer-valued finite values beside the NaN, so nothing but the NaN can
        # make the result NaN (no overflow), and a kernel that drops it gives a finite sum.
        inputs = {name: _values((n,), dtype, MIXED if kind == FRACTIONAL else kind, bound, rng,
                                integers=kind != FRACTIONAL)
                  for name in entry.arguments}
        return Case(dict(inputs), f"n={n}, dtype={dtype}, {kind}", (n,))

    return make


def _edge_max(_entry: Entry, n: int, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
    x = _values((n,), dtype, kind, 2**20, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_histogram(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    # Every size draws from [-2, nbins + 2): a few values fall outside the bins, which
    # the contract leaves uncounted.  OUT_OF_RANGE adds the extremes of the dtype and the
    # first values past each edge, where a clamp or a wrap-around shows.
    nbins = HISTOGRAM_BINS[n % len(HISTOGRAM_BINS)]
    x = rng.integers(-2, nbins + 2, n).astype(dtype)
    if kind == OUT_OF_RANGE:
        info = np.iinfo(dtype)
        outside = np.array([-1, nbins, info.min, info.max], dtype)
        x[: min(n, outside.size)] = outside[: min(n, outside.size)]
    return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}, {kind}", (n,),
                (nbins,))


def _edge_index_map(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))


def _edge_index_map_1d(_entry: Entry, n: int, dtype: np.dtype, kind: str,
                       rng: np.random.Generator) -> Case:
    return _edge_index_map(_entry, (n,), dtype, kind, rng)


def _edge_heat(entry: Entry, n: int, dtype: np.dtype, kind: str,
               rng: np.random.Generator) -> Case:
    alpha = dtype.type(ALPHAS[n % len(ALPHAS)])
    inputs: dict[str, Any] = {"u": _values((n,), dtype, kind, 1e3, rng), "alpha": alpha}
    text = f"n={n}, dtype={dtype}, alpha={float(alpha)}, {kind}"
    if "steps" in entry.arguments:
        inputs["steps"] = (1, 2, 3)[n % 3]
        text += f", steps={inputs['steps']}"
    return Case(inputs, text, (n,))


def _edge_add_one(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    a = _values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", shape)


def _edge_transpose(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    size = int(np.prod(shape))
    a = (rng.permutation(size) + 1).astype(dtype).reshape(shape)
    if kind != MIXED:
        a = _values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", (shape[1], shape[0]))


def _edge_laplacian(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    u = _values(shape, dtype, kind, 1e3, rng)
    return Case({"u": u}, f"shape={shape}, dtype={dtype}, {kind}", shape)


def _edge_matmul(_entry: Entry, shape: tuple[int, ...], dtype: np.dtype, kind: str,
                 rng: np.random.Generator) -> Case:
    m, k, n = shape
    # General floats: a launch-dependent summation order then shows in the bits.
    a = _values((m, k), dtype, kind, 2**5 if dtype.kind != "f" else 1.0, rng)
    b = _values((k, n), dtype, kind, 2**5 if dtype.kind != "f" else 1.0, rng)
    return Case({"a": a, "b": b}, f"({m}, {k}) @ ({k}, {n}), dtype={dtype}, {kind}", (m, n))


def _halo_array(inner: tuple[int, ...], width: int, dtype: np.dtype,
                rng: np.random.Generator) -> Case:
    shape = tuple(n + 2 * width for n in inner)
    size = int(np.prod(shape))
    a = (rng.permutation(size) + 1).astype(dtype).reshape(shape)
    for axis in range(len(shape)):
        if width:
            ghost = [slice(None)] * len(shape)
            ghost[axis] = slice(0, width)
            a[tuple(ghost)] = 0
            ghost[axis] = slice(-width, None)
            a[tuple(ghost)] = 0
    return Case({"a": a, "width": width}, f"shape={shape}, width={width}, dtype={dtype}", shape)


def _sweep_halo(ndim: int) -> SweepBuild:
    """Ghost widths 1 to 3 (and 0), each with the smallest interior (as wide as the
    ghosts), one more, and one past the sweep block; 2-D interiors non-square."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        index = 0
        for width in (1, 2, 3, 0):
            for extra in ((0, 1, sizing.sweep_block + 1) if width else (1,)):
                n = max(width, 1) + extra
                inner: tuple[int, ...] = (n,) if ndim == 1 else (n, n + width + 1)
                dtype = np.dtype(entry.dtypes[index % len(entry.dtypes)])
                layout = _LAYOUTS_1D[index % 2] if ndim == 1 else gst.CONTIGUOUS
                found.append(Edge(f"width={width}, interior={inner}",
                                  _halo_array(inner, width, dtype, rng), layout))
                index += 1
        return found

    return edges


# -- the repeat check's large cases ----------------------------------------------------------


def _large_1d(make: EdgeMaker) -> LargeBuild:
    """A case of ``sizing.repeat_size`` elements, made as the sweep makes its cases."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        return make(entry, sizing.repeat_size, dtype, kind, rng)

    return large


def _large_shape(shape: Callable[[Sizing], tuple[int, ...]], make: EdgeMaker) -> LargeBuild:
    """A case of the sizing's repeat shape (2-D, 3-D or a matrix product)."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        return make(entry, shape(sizing), dtype, kind, rng)

    return large


def _large_halo(ndim: int) -> LargeBuild:
    """A halo exchange of ghost width 1 around the repeat size's interior."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        inner = (sizing.repeat_size,) if ndim == 1 else sizing.repeat_shape_2d
        return _halo_array(inner, 1, dtype, rng)

    return large


def _repeat_2d(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_shape_2d


def _repeat_3d(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_shape_3d


def _repeat_matmul(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_matmul


# -- the table --------------------------------------------------------------------------------


def _shapes_2d(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_shapes_2d


def _shapes_3d(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_shapes_3d


def _shapes_matmul(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_matmul


def _spec_1d(name: str, draw: CaseDraw, make: EdgeMaker) -> KernelSpec:
    """A 1-D kernel: its sweep and its repeat case made by ``make``."""
    return KernelSpec(name, draw, _sweep_1d(make), _large_1d(make))


def _spec_shapes(name: str, draw: CaseDraw, shapes: Callable[[Sizing], tuple[tuple[int, ...], ...]],
                 repeat: Callable[[Sizing], tuple[int, ...]], make: EdgeMaker) -> KernelSpec:
    """A kernel of 2-D, 3-D or matrix-product shapes: its sweep and its repeat case."""
    return KernelSpec(name, draw, _sweep_shapes(shapes, make), _large_shape(repeat, make))


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        _spec_1d("vector_add", _vector_add_cases, _edge_vector_add),
        _spec_1d("saxpy", _saxpy_cases, _edge_saxpy),
        _spec_1d("sigmoid", _sigmoid_cases, _edge_sigmoid),
        _spec_shapes("add_one_2d", _add_one_cases, _shapes_2d, _repeat_2d, _edge_add_one),
        _spec_1d("index_map_1d", _index_map_cases, _edge_index_map_1d),
        _spec_shapes("index_map_2d", _index_map_cases, _shapes_2d, _repeat_2d, _edge_index_map),
        _spec_shapes("index_map_3d", _index_map_cases, _shapes_3d, _repeat_3d, _edge_index_map),
        _spec_1d("index_map_grid_stride", _index_map_cases, _edge_index_map_1d),
        _spec_shapes("transpose", _transpose_cases, _shapes_2d, _repeat_2d, _edge_transpose),
        _spec_1d("sum", _reduction_cases(SUM_EXACT_BOUND), _edge_reduction(SUM_EXACT_BOUND)),
        _spec_1d("dot", _reduction_cases(PRODUCT_EXACT_BOUND),
                 _edge_reduction(PRODUCT_EXACT_BOUND)),
        _spec_1d("max", _max_cases, _edge_max),
        _spec_1d("weighted_sum", _reduction_cases(PRODUCT_EXACT_BOUND),
                 _edge_reduction(PRODUCT_EXACT_BOUND)),
        _spec_1d("sum_of_squares", _reduction_cases(PRODUCT_EXACT_BOUND),
                 _edge_reduction(PRODUCT_EXACT_BOUND)),
        _spec_1d("histogram", _histogram_cases, _edge_histogram),
        KernelSpec("monte_carlo_pi", _monte_carlo_cases),
        _spec_1d("heat_step_1d", _heat_cases, _edge_heat),
        _spec_1d("heat_steps_1d", _heat_cases, _edge_heat),
        _spec_shapes("laplacian_2d", _laplacian_cases, _shapes_2d, _repeat_2d, _edge_laplacian),
        KernelSpec("halo_exchange_1d", _halo_cases(1), _sweep_halo(1), _large_halo(1)),
        KernelSpec("halo_exchange_2d", _halo_cases(2), _sweep_halo(2), _large_halo(2)),
        _spec_shapes("matmul", _matmul_cases, _shapes_matmul, _repeat_matmul, _edge_matmul),
        _spec_shapes("matmul_tiled", _matmul_cases, _shapes_matmul, _repeat_matmul,
                     _edge_matmul),
    )
}


#: Modules adding the specs of further families (each has a ``SPECS`` table).
FAMILY_SPEC_MODULES = ("pytest_gpucheck.conformance.specs_ufuncs",
                       "pytest_gpucheck.conformance.specs_transforms",
                       "pytest_gpucheck.conformance.specs_multi_device",
                       "pytest_gpucheck.conformance.specs_fused")
for _module in FAMILY_SPEC_MODULES:
    SPECS.update(importlib.import_module(_module).SPECS)


# -- kernels with a catalog entry and no spec ------------------------------------------------
#
# A kernel whose inputs are 1-D arrays of one size and dtype (the shape of most elementwise
# kernels) needs no spec of its own: these draw every argument its catalog entry names.


def _vectors_cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*entry.dtypes))
        n = draw(gst.sizes(sizing, min_size=entry.min_size))
        inputs = {name: draw(gst.arrays(dtype, n, _elements(dtype, 2**20)))
                  for name in entry.arguments}
        return Case(inputs, f"n={n}, dtype={dtype}", (n,))

    return draw()


def _edge_vectors(entry: Entry, n: int, dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    inputs = {name: _values((n,), dtype, kind, 2**20, rng) for name in entry.arguments}
    return Case(inputs, f"n={n}, dtype={dtype}, {kind}", (n,))


def spec_for(kernel: str) -> KernelSpec:
    """The spec of ``kernel``: its own, or for a kernel the catalog has and no spec module
    covers, the one that draws every argument as a 1-D array of one size and dtype; a
    one-line error names the known kernels."""
    if kernel in SPECS:
        return SPECS[kernel]
    from pytest_gpucheck.reference_kernels import CATALOG

    if kernel in CATALOG:
        return KernelSpec(kernel, _vectors_cases, _sweep_1d(_edge_vectors),
                          _large_1d(_edge_vectors))
    raise KeyError(f"no conformance spec for kernel {kernel!r}; "
                   f"known: {', '.join(CATALOG)}")


__all__ = ["FLOATS", "HEAT_OPS", "INDEX_DTYPES", "NUMERIC", "SIGMOID_ULPS", "SPECS", "Case",
           "CaseDraw", "Edge", "KernelSpec", "LargeBuild", "SweepBuild", "spec_for"]
