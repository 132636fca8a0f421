"""What every family's specs are made of: :class:`Case` (one drawn problem), :class:`Edge`
(one case of the boundary sweep), :class:`KernelSpec`, the value strategies, and the
builders of the boundary sweep and of the repeat check's large case.

The boundary sweep: edge cases derived from each contract, run on every backend before
hypothesis explores: the sizes around the sweep block, shapes with every axis distinct,
empty inner dimensions, ghost widths 1 to 3, and value classes that random finite
in-range draws rarely produce.  Deterministic (a fixed seed), so the derandomized ``ci``
profile meets every class on every run.  The value classes (MIXED, NEGATIVE, ...) and
which of them each kernel's sweep draws (``Entry.edge_values``) are contract facts: they
live in the catalog.

A kernel whose inputs are 1-D arrays of one size and dtype (the shape of most elementwise
kernels) needs no spec of its own: :func:`vectors_cases` and :func:`edge_vectors` draw
every argument its catalog entry names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking import tolerance as tol
from pytest_gpucheck.checking.assertions import show_values
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.checking.kernel_rules import rule_for
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.reference_kernels.catalog import (
    FLOATS,
    FRACTIONAL,
    MIXED,
    NEGATIVE,
    ONE_NAN,
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
    #: Layouts of single arguments, overriding ``layout`` (the derived view classes).
    layouts: tuple[tuple[str, str], ...] = ()
    #: The launches of an implementation that takes ``launch``, instead of the sweep's two
    #: (the derived launch edges); an implementation without ``launch`` skips the case.
    launches: tuple[LaunchConfig, ...] | None = None


#: Draws the problems of a kernel, given the sizing and its catalog entry.
CaseDraw = Callable[[Sizing, Entry], st.SearchStrategy[Case]]


#: Builds the boundary sweep of a kernel, given the sizing and its catalog entry.
SweepBuild = Callable[[Sizing, Entry], list[Edge]]


#: Builds the derived sweep's base case of a kernel: ``base(sizing, entry, dtype, rng)``.
BaseBuild = Callable[[Sizing, Entry, np.dtype, np.random.Generator], "Case | None"]


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
    #: The derived sweep's base case, for a spec without a sweep whose arguments are not
    #: vectors of one size (:func:`.derived.base_cases`): ``base(sizing, entry, dtype, rng)``.
    base: BaseBuild | None = None

    @property
    def entry(self) -> Entry:
        """The kernel's catalog entry: the contract this spec draws problems for."""
        return entry_for(self.name)

    def cases(self, sizing: Sizing) -> st.SearchStrategy[Case]:
        """The strategy of drawn problems for ``sizing``."""
        return self.draw(sizing, self.entry)

    def edges(self, sizing: Sizing) -> list[Edge]:
        """The spec's own boundary sweep for ``sizing`` (empty when the kernel has none); the
        sweep runs these and then the derived ones (:func:`.derived.sweep_edges`)."""
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
        rng = np.random.default_rng(SWEEP_SEED + 1)
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


#: Draws one case once its dtype is drawn: ``build(draw, sizing, entry, dtype)``.
CaseBuild = Callable[[Any, Sizing, Entry, np.dtype], Case]


def case_draw(build: CaseBuild) -> CaseDraw:
    """The :data:`CaseDraw` of a spec whose first draw is a dtype of its catalog entry (every
    spec's): ``build`` draws the rest with hypothesis' ``draw`` and returns the case."""

    def cases(sizing: Sizing, entry: Entry) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            return build(draw, sizing, entry, draw(gst.dtypes(*entry.dtypes)))

        return draw()

    return cases


def elements(dtype: np.dtype, bound: float) -> st.SearchStrategy[Any]:
    """Finite floats in [-bound, bound], or integers in that range for integer dtypes."""
    if dtype.kind == "f":
        return gst.finite_floats(dtype, bound)
    return gst.integer_valued(dtype, -int(bound), int(bound))


def one_kind(dtype: np.dtype, exact_bound: int, float_bound: float) -> st.SearchStrategy[
        st.SearchStrategy[Any]]:
    """Pick, per example, either integer-valued or general elements for the whole array."""
    choices = [gst.nonzero_integer_valued(dtype, exact_bound)]
    if dtype.kind == "f":
        choices.append(gst.finite_floats(dtype, float_bound))
    return st.sampled_from(choices)


FLOAT_ONLY = (SUBNORMAL, SPECIALS, FRACTIONAL, ONE_NAN)


LAYOUTS_1D = (gst.CONTIGUOUS, gst.STRIDED)


LAYOUTS_2D = (gst.CONTIGUOUS, gst.STRIDED, gst.TRANSPOSED)


SWEEP_SEED = 20240611


def sweep_values(shape: tuple[int, ...], dtype: np.dtype, kind: str, bound: float,
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


def sweep_1d(make: EdgeMaker) -> SweepBuild:
    """Every sweep size from the entry's ``min_size`` (its dtypes and layouts taken in turn),
    then each of its value classes at ``block + 1`` elements, once per float dtype where it
    concerns floats only."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        dtypes, kinds = entry.dtypes, entry.edge_values
        rng = np.random.default_rng(SWEEP_SEED)
        found = []
        sizes = [n for n in sizing.sweep_sizes if n >= entry.min_size]
        for i, n in enumerate(sizes):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            found.append(Edge(f"n={n}", make(entry, n, dtype, MIXED, rng), LAYOUTS_1D[i % 2]))
        n = sizing.sweep_block + 1
        for kind in kinds:
            floats = kind in FLOAT_ONLY
            for name in dict.fromkeys(d for d in dtypes if not floats or d in FLOATS):
                if kind == NEGATIVE and name not in (dtypes[0], dtypes[-1]):
                    continue  # one float and one integer dtype are enough for signs
                found.append(Edge(kind, make(entry, n, np.dtype(name), kind, rng)))
        return found

    return edges


def sweep_shapes(shapes: Callable[[Sizing], tuple[tuple[int, ...], ...]],
                  make: EdgeMaker) -> SweepBuild:
    """Every sweep shape (the entry's dtypes and layouts in turn), then each of its value
    classes on the last (largest) shape."""
    def edges(sizing: Sizing, entry: Entry) -> list[Edge]:
        dtypes, kinds = entry.dtypes, entry.edge_values
        rng = np.random.default_rng(SWEEP_SEED)
        found = []
        every = shapes(sizing)
        for i, shape in enumerate(every):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            layout = LAYOUTS_2D[i % 3] if len(shape) == 2 else gst.CONTIGUOUS
            found.append(Edge(f"shape={shape}", make(entry, shape, dtype, MIXED, rng), layout))
        for kind in kinds:
            floats = kind in FLOAT_ONLY
            name = next(d for d in dtypes if not floats or d in FLOATS)
            found.append(Edge(kind, make(entry, every[-1], np.dtype(name), kind, rng)))
        return found

    return edges


def large_1d(make: EdgeMaker) -> LargeBuild:
    """A case of ``sizing.repeat_size`` elements, made as the sweep makes its cases."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        return make(entry, sizing.repeat_size, dtype, kind, rng)

    return large


def large_shape(shape: Callable[[Sizing], tuple[int, ...]], make: EdgeMaker) -> LargeBuild:
    """A case of the sizing's repeat shape (2-D, 3-D or a matrix product)."""
    def large(sizing: Sizing, entry: Entry, dtype: np.dtype, kind: str,
              rng: np.random.Generator) -> Case:
        return make(entry, shape(sizing), dtype, kind, rng)

    return large


def repeat_2d(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_shape_2d


def repeat_3d(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_shape_3d


def repeat_matmul(sizing: Sizing) -> tuple[int, ...]:
    return sizing.repeat_matmul


def sweep_2d(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_shapes_2d


def sweep_3d(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_shapes_3d


def sweep_matmul(sizing: Sizing) -> tuple[tuple[int, ...], ...]:
    return sizing.sweep_matmul


def spec_1d(name: str, draw: CaseDraw, make: EdgeMaker) -> KernelSpec:
    """A 1-D kernel: its sweep and its repeat case made by ``make``."""
    return KernelSpec(name, draw, sweep_1d(make), large_1d(make))


def spec_shapes(name: str, draw: CaseDraw, shapes: Callable[[Sizing], tuple[tuple[int, ...], ...]],
                 repeat: Callable[[Sizing], tuple[int, ...]], make: EdgeMaker) -> KernelSpec:
    """A kernel of 2-D, 3-D or matrix-product shapes: its sweep and its repeat case."""
    return KernelSpec(name, draw, sweep_shapes(shapes, make), large_shape(repeat, make))


@case_draw
def vectors_cases(draw: Any, sizing: Sizing, entry: Entry, dtype: np.dtype) -> Case:
    n = draw(gst.sizes(sizing, min_size=entry.min_size))
    inputs = {name: draw(gst.arrays(dtype, n, elements(dtype, 2**20)))
              for name in entry.arguments}
    return Case(inputs, f"n={n}, dtype={dtype}", (n,))


def edge_vectors(entry: Entry, n: int, dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    inputs = {name: sweep_values((n,), dtype, kind, 2**20, rng) for name in entry.arguments}
    return Case(inputs, f"n={n}, dtype={dtype}, {kind}", (n,))
