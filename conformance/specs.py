"""One :class:`KernelSpec` per bundled kernel: inputs, reference, tolerance, output rules.

A spec says how to draw a problem for a backend (a hypothesis strategy of
:class:`Case`), how the reference computes the expected result, which derived
tolerance applies, how the output starts (poison, zero, the reduction's
identity), whether the kernel updates an argument in place, which launch
domain a ``launch`` argument covers, and whether the contract is statistical.
The argument names and order are those of ``docs/kernels.md``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st

from pytest_gpucheck import strategies as gst
from pytest_gpucheck import tolerance as tol
from pytest_gpucheck.strategies import Sizing
from reference_kernels import FAMILIES, KERNELS

OutputInit = Literal["poison", "zero", "lowest"]
LaunchKind = Literal["1d", "2d", "3d", "grid-stride"]


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


@dataclass(frozen=True)
class Edge:
    """One case of the boundary sweep, which runs before the random search."""

    #: What the case is there for: ``n = block + 1``, ``all negative``, ``NaN and inf``.
    what: str
    case: Case
    #: The layout of every array input (contiguous, strided or, for 2-D, transposed).
    layout: str = gst.CONTIGUOUS


@dataclass(frozen=True)
class KernelSpec:
    """What the suite needs to know to check any implementation of one kernel."""

    name: str
    #: Input arguments in call order (``out`` and ``launch`` are passed by keyword).
    arguments: tuple[str, ...]
    cases: Callable[[Sizing], st.SearchStrategy[Case]]
    #: Derived tolerance for a case and its expected result.
    rule: Callable[[Case, np.ndarray], tol.Tolerance]
    output_init: OutputInit = "poison"
    #: Name of the argument updated in place (``a``), or None.
    in_place: str | None = None
    #: The launch drawn for implementations that take ``launch``.
    launch: LaunchKind = "1d"
    #: 2-D launches with square blocks only (classic shared-memory tiles).
    square_blocks: bool = False
    #: True for monte_carlo_pi: checked by statistics, not against a reference.
    statistical: bool = False
    #: Kernels whose only argument is ``out`` (index maps) cannot return a result.
    requires_out: bool = False
    #: Sizes that ``out`` carries, passed by keyword to implementations that return their
    #: result instead (``histogram(x, nbins)``, ``monte_carlo_pi(seed, n, dtype)``).
    size_arguments: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: The boundary sweep: deterministic edge cases every backend runs first.
    edges: Callable[[Sizing], list[Edge]] | None = None
    #: Each output element is computed the same way whatever the launch, so the same
    #: inputs give the same bits under every launch.  False where the summation order
    #: legitimately follows the blocks (float reductions, shared-memory tiles).
    launch_invariant: bool = True

    @property
    def family(self) -> str:
        return FAMILIES[self.name]

    @property
    def reference(self) -> Callable[..., Any]:
        return KERNELS[self.name]

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
        from pytest_gpucheck.guards import poison_value

        if self.output_init == "zero":
            return np.zeros((), dtype=dtype)
        if self.output_init == "lowest":
            return np.array(-np.inf if dtype.kind == "f" else np.iinfo(dtype).min, dtype=dtype)
        return poison_value(dtype)


# -- value strategies -----------------------------------------------------------------------

FLOATS = ("float32", "float64")
NUMERIC = ("float32", "float64", "int32", "int64")


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


def _correctly_rounded(dtype: np.dtype) -> tol.Tolerance:
    if dtype.kind != "f":
        return tol.exact("integer arithmetic is exact (inputs drawn without overflow)")
    return tol.within_ulps(dtype, 0, "one IEEE operation is correctly rounded: the same bits "
                                     "everywhere, except that a subnormal result may be "
                                     "flushed to zero")


def _exact(reason: str) -> Callable[[Case, np.ndarray], tol.Tolerance]:
    def rule(_case: Case, _expected: np.ndarray) -> tol.Tolerance:
        return tol.exact(reason)

    return rule


_exact_copy = _exact("the kernel only moves values")
_exact_index = _exact("index arithmetic is exact")


# -- elementwise ------------------------------------------------------------------------------


def _vector_add_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*NUMERIC))
        n = draw(gst.sizes(sizing))
        bound = 2**30 if dtype == np.int32 else 2**61 if dtype == np.int64 else 1e30
        a = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        b = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}", (n,))

    return draw()


def _saxpy_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        n = draw(gst.sizes(sizing))
        alpha = draw(gst.scalars(dtype, gst.finite_floats(dtype, 100.0)))
        x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        y = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
        return Case({"alpha": alpha, "x": x, "y": y},
                    f"n={n}, dtype={dtype}, alpha={float(alpha)!r}", (n,))

    return draw()


def _saxpy_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    x = case.inputs["x"].astype(np.float64)
    y = case.inputs["y"].astype(np.float64)
    alpha = float(case.inputs["alpha"])
    return tol.terms_rule(np.abs(alpha * x) + np.abs(y), 2, expected.dtype,
                          what="alpha*x + y, fused or not")


#: sigmoid: exp (<= 1 ULP in the usual libms, ~2 on GPUs), an add and a divide,
#: whose errors add up to about 4 ULP; 4 is the bound the suite enforces.
SIGMOID_ULPS = 4


def _sigmoid_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        n = draw(gst.sizes(sizing))
        # +-120 covers both saturations (exp overflows beyond ~88 in float32).
        x = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 120.0)))
        return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))

    return draw()


def _sigmoid_rule(_case: Case, expected: np.ndarray) -> tol.Tolerance:
    return tol.within_ulps(expected.dtype, SIGMOID_ULPS,
                           "exp, add and divide, each within ~1-2 ULP, against a float64 "
                           "reference rounded once")


def _add_one_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*NUMERIC))
        shape = draw(gst.shapes_2d(sizing))
        a = draw(gst.arrays(dtype, shape, _elements(dtype, 2**20)))
        return Case({"a": a}, f"shape={shape}, dtype={dtype}", shape)

    return draw()


# -- indexing ---------------------------------------------------------------------------------

INDEX_DTYPES = ("int32", "int64")


def _index_map_cases(kind: LaunchKind) -> Callable[[Sizing], st.SearchStrategy[Case]]:
    def cases(sizing: Sizing) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*INDEX_DTYPES))
            if kind == "2d":
                shape: tuple[int, ...] = draw(gst.shapes_2d(sizing))
            elif kind == "3d":
                shape = draw(gst.shapes_3d(sizing))
            else:
                shape = (draw(gst.sizes(sizing)),)
            return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))

        return draw()

    return cases


def _transpose_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*NUMERIC))
        shape = draw(gst.shapes_2d(sizing))
        a = draw(gst.distinct_values(dtype, shape))
        return Case({"a": a}, f"shape={shape}, dtype={dtype}", (shape[1], shape[0]))

    return draw()


# -- reductions -------------------------------------------------------------------------------

#: Integer-valued inputs up to these magnitudes keep every sum below 2**24 for the
#: largest bucket size (1031 elements): exact in float32 in any order.
SUM_EXACT_BOUND = 2**12
PRODUCT_EXACT_BOUND = 2**6


def _reduction_cases(arguments: tuple[str, ...], exact_bound: int,
                     *, min_size: int = 0) -> Callable[[Sizing], st.SearchStrategy[Case]]:
    def cases(sizing: Sizing) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*NUMERIC))
            n = draw(gst.sizes(sizing, min_size=min_size))
            elements = draw(_one_kind(dtype, exact_bound, 1e3))
            inputs = {name: draw(gst.arrays(dtype, n, elements)) for name in arguments}
            return Case(inputs, f"n={n}, dtype={dtype}", (n,))

        return draw()

    return cases


def _terms(case: Case, name: str) -> np.ndarray:
    x = case.inputs["x"]
    if name == "sum":
        return x
    if name == "sum_of_squares":
        return x.astype(np.float64) * x.astype(np.float64)
    other = case.inputs["y" if name == "dot" else "w"]
    return x.astype(np.float64) * other.astype(np.float64)


def _reduction_rule(name: str) -> Callable[[Case, np.ndarray], tol.Tolerance]:
    def rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
        return tol.sum_rule(_terms(case, name), expected.dtype, what=name)

    return rule


def _max_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*NUMERIC))
        n = draw(gst.sizes(sizing, min_size=1))
        bound = 1e30 if dtype.kind == "f" else np.iinfo(dtype).max
        x = draw(gst.arrays(dtype, n, _elements(dtype, bound)))
        return Case({"x": x}, f"n={n}, dtype={dtype}", (n,))

    return draw()


HISTOGRAM_BINS = (1, 2, 7, 32, 33, 100)


def _histogram_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*INDEX_DTYPES))
        n = draw(gst.sizes(sizing))
        nbins = draw(st.sampled_from(HISTOGRAM_BINS))
        x = draw(gst.arrays(dtype, n, gst.integer_valued(dtype, 0, nbins - 1)))
        return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}", (n,),
                    (nbins,))

    return draw()


def _monte_carlo_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        n = draw(st.sampled_from(sizing.samples))
        seed = draw(st.integers(0, 2**31 - 1))
        return Case({"seed": seed, "n": n, "dtype": dtype}, f"n={n}, seed={seed}, dtype={dtype}",
                    (n,))

    return draw()


# -- stencils ---------------------------------------------------------------------------------

ALPHAS = (0.1, 0.25, 0.4, 0.5)
STEPS = (0, 1, 2, 5)


def _heat_cases(with_steps: bool) -> Callable[[Sizing], st.SearchStrategy[Case]]:
    def cases(sizing: Sizing) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*FLOATS))
            n = draw(gst.sizes(sizing))
            alpha = dtype.type(draw(st.sampled_from(ALPHAS)))
            u = draw(gst.arrays(dtype, n, gst.finite_floats(dtype, 1e3)))
            inputs: dict[str, Any] = {"u": u, "alpha": alpha}
            text = f"n={n}, dtype={dtype}, alpha={float(alpha)}"
            if with_steps:
                inputs["steps"] = draw(st.sampled_from(STEPS))
                text += f", steps={inputs['steps']}"
            return Case(inputs, text, (n,))

        return draw()

    return cases


#: Rounded operations in one heat-step update ``u + a*(l - 2u + r)`` (or a rearrangement).
HEAT_OPS = 6


def _heat_step_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    u = np.abs(case.inputs["u"].astype(np.float64))
    alpha = float(case.inputs["alpha"])
    terms = np.zeros_like(u)
    if u.size > 2:
        terms[1:-1] = u[1:-1] * (1 + 2 * alpha) + alpha * (u[:-2] + u[2:])
    return tol.terms_rule(terms, HEAT_OPS, expected.dtype, what="heat step")


def _heat_steps_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    steps = int(case.inputs["steps"])
    if steps == 0:
        return tol.exact("zero steps copy u")
    u = case.inputs["u"]
    alpha = float(case.inputs["alpha"])
    # With alpha <= 1/2 the update has non-negative weights summing to 1, so
    # max|u| never grows and errors are not amplified: each step adds at most
    # gamma * (1 + 4 alpha) * max|u0| per element.
    scale = float(np.max(np.abs(u.astype(np.float64)), initial=0.0)) * (1 + 4 * alpha)
    bound = steps * (tol.gamma(HEAT_OPS + 1, expected.dtype) * scale
                     + tol.underflow_allowance(HEAT_OPS + 1, expected.dtype))
    return tol.Tolerance(
        "bound", f"{steps} steps x gamma_{HEAT_OPS + 1} * (1 + 4 alpha) * max|u| "
                 "(stable scheme: errors do not grow)",
        bound=np.asarray(bound))


def _laplacian_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*FLOATS))
        shape = draw(gst.shapes_2d(sizing))
        u = draw(gst.arrays(dtype, shape, gst.finite_floats(dtype, 1e3)))
        return Case({"u": u}, f"shape={shape}, dtype={dtype}", shape)

    return draw()


def _laplacian_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    u = np.abs(case.inputs["u"].astype(np.float64))
    terms = np.zeros_like(u)
    if u.shape[0] > 2 and u.shape[1] > 2:
        terms[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                             + 4 * u[1:-1, 1:-1])
    return tol.terms_rule(terms, 6, expected.dtype, what="five-point Laplacian")


# -- halos ------------------------------------------------------------------------------------

HALO_WIDTHS = (0, 1, 2, 3)


def _halo_cases(ndim: int) -> Callable[[Sizing], st.SearchStrategy[Case]]:
    def cases(sizing: Sizing) -> st.SearchStrategy[Case]:
        @st.composite
        def draw(draw: Any) -> Case:
            dtype = draw(gst.dtypes(*NUMERIC))
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


def _matmul_cases(sizing: Sizing) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw: Any) -> Case:
        dtype = draw(gst.dtypes(*NUMERIC))
        m, k, n = draw(gst.matmul_shapes(sizing))
        elements = draw(_one_kind(dtype, 2**5, 1.0))
        a = draw(gst.arrays(dtype, (m, k), elements))
        b = draw(gst.arrays(dtype, (k, n), elements))
        return Case({"a": a, "b": b}, f"({m}, {k}) @ ({k}, {n}), dtype={dtype}", (m, n))

    return draw()


def _matmul_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    return tol.matmul_rule(case.inputs["a"], case.inputs["b"], expected.dtype)


# -- the boundary sweep -----------------------------------------------------------------------
#
# Edge cases derived from each contract, run on every backend before hypothesis
# explores: the sizes around the sweep block, shapes with every axis distinct,
# empty inner dimensions, ghost widths 1 to 3, and value classes that random
# finite in-range draws rarely produce.  Deterministic (a fixed seed), so the
# derandomized ``ci`` profile meets every class on every run.

#: Value classes.  ``specials`` (NaN, +-inf) only where IEEE arithmetic defines the
#: result the contract asks for; ``subnormal`` only where the rule allows flushing.
MIXED, NEGATIVE, SUBNORMAL, SPECIALS = "mixed", "all negative", "subnormal", "NaN and inf"
#: Non-integer floats for the reductions, whose other cases are integer-valued (exact in
#: any order): only these show an accumulator narrower than the data.
FRACTIONAL = "fractional"
_FLOAT_ONLY = (SUBNORMAL, SPECIALS, FRACTIONAL)
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
    return result.reshape(shape)


def _sweep_1d(make: Callable[[int, np.dtype, str, np.random.Generator], Case],
              dtypes: tuple[str, ...], *, min_size: int = 0,
              kinds: tuple[str, ...] = (NEGATIVE,)) -> Callable[[Sizing], list[Edge]]:
    """Every sweep size (dtypes and layouts taken in turn), then each value class at
    ``block + 1`` elements, once per float dtype where it concerns floats only."""
    def edges(sizing: Sizing) -> list[Edge]:
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        sizes = [n for n in sizing.sweep_sizes if n >= min_size]
        for i, n in enumerate(sizes):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            found.append(Edge(f"n={n}", make(n, dtype, MIXED, rng), _LAYOUTS_1D[i % 2]))
        n = sizing.sweep_block + 1
        for kind in kinds:
            floats = kind in _FLOAT_ONLY
            for name in dict.fromkeys(d for d in dtypes if not floats or d in FLOATS):
                if kind == NEGATIVE and name not in (dtypes[0], dtypes[-1]):
                    continue  # one float and one integer dtype are enough for signs
                found.append(Edge(kind, make(n, np.dtype(name), kind, rng)))
        return found

    return edges


def _sweep_shapes(shapes: Callable[[Sizing], tuple[tuple[int, ...], ...]],
                  make: Callable[[tuple[int, ...], np.dtype, str, np.random.Generator], Case],
                  dtypes: tuple[str, ...], *,
                  kinds: tuple[str, ...] = (NEGATIVE,)) -> Callable[[Sizing], list[Edge]]:
    """Every sweep shape (dtypes and layouts in turn), then each value class on the
    last (largest) shape."""
    def edges(sizing: Sizing) -> list[Edge]:
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        every = shapes(sizing)
        for i, shape in enumerate(every):
            dtype = np.dtype(dtypes[i % len(dtypes)])
            layout = _LAYOUTS_2D[i % 3] if len(shape) == 2 else gst.CONTIGUOUS
            found.append(Edge(f"shape={shape}", make(shape, dtype, MIXED, rng), layout))
        for kind in kinds:
            floats = kind in _FLOAT_ONLY
            name = next(d for d in dtypes if not floats or d in FLOATS)
            found.append(Edge(kind, make(every[-1], np.dtype(name), kind, rng)))
        return found

    return edges


def _edge_vector_add(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    a = _values((n,), dtype, kind, 2**20, rng)
    b = _values((n,), dtype, kind if kind != SPECIALS else MIXED, 2**20, rng)
    return Case({"a": a, "b": b}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_saxpy(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    alpha = dtype.type(-1.5)
    x, y = (_values((n,), dtype, kind, 1e3, rng) for _ in range(2))
    return Case({"alpha": alpha, "x": x, "y": y}, f"n={n}, dtype={dtype}, alpha=-1.5, {kind}",
                (n,))


def _edge_sigmoid(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    x = _values((n,), dtype, kind, 120.0, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_reduction(arguments: tuple[str, ...], bound: int) -> Callable[
        [int, np.dtype, str, np.random.Generator], Case]:
    def make(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
        inputs = {name: _values((n,), dtype, MIXED if kind == FRACTIONAL else kind, bound, rng,
                                integers=kind != FRACTIONAL)
                  for name in arguments}
        return Case(dict(inputs), f"n={n}, dtype={dtype}, {kind}", (n,))

    return make


def _edge_max(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    x = _values((n,), dtype, kind, 2**20, rng)
    return Case({"x": x}, f"n={n}, dtype={dtype}, {kind}", (n,))


def _edge_histogram(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    # Values outside [0, nbins) are undefined by the contract, so never drawn.
    nbins = HISTOGRAM_BINS[n % len(HISTOGRAM_BINS)]
    x = rng.integers(0, nbins, n).astype(dtype)
    return Case({"x": x, "nbins": nbins}, f"n={n}, nbins={nbins}, dtype={dtype}", (n,),
                (nbins,))


def _edge_index_map(shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    return Case({}, f"shape={shape}, dtype={dtype}", shape, (shape, dtype))


def _edge_index_map_1d(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
    return _edge_index_map((n,), dtype, kind, rng)


def _edge_heat(with_steps: bool) -> Callable[[int, np.dtype, str, np.random.Generator], Case]:
    def make(n: int, dtype: np.dtype, kind: str, rng: np.random.Generator) -> Case:
        alpha = dtype.type(ALPHAS[n % len(ALPHAS)])
        inputs: dict[str, Any] = {"u": _values((n,), dtype, kind, 1e3, rng), "alpha": alpha}
        text = f"n={n}, dtype={dtype}, alpha={float(alpha)}, {kind}"
        if with_steps:
            inputs["steps"] = (1, 2, 3)[n % 3]
            text += f", steps={inputs['steps']}"
        return Case(inputs, text, (n,))

    return make


def _edge_add_one(shape: tuple[int, ...], dtype: np.dtype, kind: str,
                  rng: np.random.Generator) -> Case:
    a = _values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", shape)


def _edge_transpose(shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    size = int(np.prod(shape))
    a = (rng.permutation(size) + 1).astype(dtype).reshape(shape)
    if kind != MIXED:
        a = _values(shape, dtype, kind, 2**20, rng)
    return Case({"a": a}, f"shape={shape}, dtype={dtype}, {kind}", (shape[1], shape[0]))


def _edge_laplacian(shape: tuple[int, ...], dtype: np.dtype, kind: str,
                    rng: np.random.Generator) -> Case:
    u = _values(shape, dtype, kind, 1e3, rng)
    return Case({"u": u}, f"shape={shape}, dtype={dtype}, {kind}", shape)


def _edge_matmul(shape: tuple[int, ...], dtype: np.dtype, kind: str,
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


def _sweep_halo(ndim: int) -> Callable[[Sizing], list[Edge]]:
    """Ghost widths 1 to 3 (and 0), each with the smallest interior (as wide as the
    ghosts), one more, and one past the sweep block; 2-D interiors non-square."""
    def edges(sizing: Sizing) -> list[Edge]:
        rng = np.random.default_rng(_SWEEP_SEED)
        found = []
        index = 0
        for width in (1, 2, 3, 0):
            for extra in ((0, 1, sizing.sweep_block + 1) if width else (1,)):
                n = max(width, 1) + extra
                inner: tuple[int, ...] = (n,) if ndim == 1 else (n, n + width + 1)
                dtype = np.dtype(NUMERIC[index % len(NUMERIC)])
                layout = _LAYOUTS_1D[index % 2] if ndim == 1 else gst.CONTIGUOUS
                found.append(Edge(f"width={width}, interior={inner}",
                                  _halo_array(inner, width, dtype, rng), layout))
                index += 1
        return found

    return edges


# -- the table --------------------------------------------------------------------------------


def _elementwise_rule(case: Case, expected: np.ndarray) -> tol.Tolerance:
    return _correctly_rounded(expected.dtype)


SPECS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("vector_add", ("a", "b"), _vector_add_cases, _elementwise_rule,
                   edges=_sweep_1d(_edge_vector_add, NUMERIC,
                                   kinds=(NEGATIVE, SUBNORMAL, SPECIALS))),
        KernelSpec("saxpy", ("alpha", "x", "y"), _saxpy_cases, _saxpy_rule,
                   edges=_sweep_1d(_edge_saxpy, FLOATS, kinds=(NEGATIVE, SUBNORMAL))),
        KernelSpec("sigmoid", ("x",), _sigmoid_cases, _sigmoid_rule,
                   edges=_sweep_1d(_edge_sigmoid, FLOATS,
                                   kinds=(NEGATIVE, SUBNORMAL, SPECIALS))),
        KernelSpec("add_one_2d", ("a",), _add_one_cases, _elementwise_rule, in_place="a",
                   launch="2d", edges=_sweep_shapes(lambda s: s.sweep_shapes_2d, _edge_add_one,
                                                    NUMERIC, kinds=(NEGATIVE, SPECIALS))),
        KernelSpec("index_map_1d", (), _index_map_cases("1d"), _exact_index, requires_out=True,
                   edges=_sweep_1d(_edge_index_map_1d, INDEX_DTYPES, kinds=())),
        KernelSpec("index_map_2d", (), _index_map_cases("2d"), _exact_index, launch="2d",
                   requires_out=True, edges=_sweep_shapes(lambda s: s.sweep_shapes_2d,
                                                          _edge_index_map, INDEX_DTYPES,
                                                          kinds=())),
        KernelSpec("index_map_3d", (), _index_map_cases("3d"), _exact_index, launch="3d",
                   requires_out=True, edges=_sweep_shapes(lambda s: s.sweep_shapes_3d,
                                                          _edge_index_map, INDEX_DTYPES,
                                                          kinds=())),
        KernelSpec("index_map_grid_stride", (), _index_map_cases("grid-stride"), _exact_index,
                   launch="grid-stride", requires_out=True,
                   edges=_sweep_1d(_edge_index_map_1d, INDEX_DTYPES, kinds=())),
        KernelSpec("transpose", ("a",), _transpose_cases, _exact_copy, launch="2d",
                   edges=_sweep_shapes(lambda s: s.sweep_shapes_2d, _edge_transpose, NUMERIC,
                                       kinds=(NEGATIVE, SPECIALS))),
        KernelSpec("sum", ("x",), _reduction_cases(("x",), SUM_EXACT_BOUND),
                   _reduction_rule("sum"), output_init="zero", launch_invariant=False,
                   edges=_sweep_1d(_edge_reduction(("x",), SUM_EXACT_BOUND), NUMERIC,
                                   kinds=(NEGATIVE, SUBNORMAL, FRACTIONAL))),
        KernelSpec("dot", ("x", "y"), _reduction_cases(("x", "y"), PRODUCT_EXACT_BOUND),
                   _reduction_rule("dot"), output_init="zero", launch_invariant=False,
                   edges=_sweep_1d(_edge_reduction(("x", "y"), PRODUCT_EXACT_BOUND), NUMERIC,
                                   kinds=(NEGATIVE, FRACTIONAL))),
        KernelSpec("max", ("x",), _max_cases, _exact("max involves no rounding"),
                   output_init="lowest", edges=_sweep_1d(_edge_max, NUMERIC, min_size=1)),
        KernelSpec("weighted_sum", ("x", "w"), _reduction_cases(("x", "w"), PRODUCT_EXACT_BOUND),
                   _reduction_rule("weighted_sum"), output_init="zero",
                   launch_invariant=False,
                   edges=_sweep_1d(_edge_reduction(("x", "w"), PRODUCT_EXACT_BOUND), NUMERIC,
                                   kinds=(NEGATIVE, FRACTIONAL))),
        KernelSpec("sum_of_squares", ("x",), _reduction_cases(("x",), PRODUCT_EXACT_BOUND),
                   _reduction_rule("sum_of_squares"), output_init="zero",
                   launch_invariant=False,
                   edges=_sweep_1d(_edge_reduction(("x",), PRODUCT_EXACT_BOUND), NUMERIC,
                                   kinds=(NEGATIVE, FRACTIONAL))),
        KernelSpec("histogram", ("x",), _histogram_cases, _exact("counts are integers"),
                   output_init="zero", size_arguments=("nbins",),
                   edges=_sweep_1d(_edge_histogram, INDEX_DTYPES, kinds=())),
        KernelSpec("monte_carlo_pi", ("seed",), _monte_carlo_cases, _exact_copy,
                   statistical=True, size_arguments=("n", "dtype"), launch_invariant=False),
        KernelSpec("heat_step_1d", ("u", "alpha"), _heat_cases(False), _heat_step_rule,
                   edges=_sweep_1d(_edge_heat(False), FLOATS, kinds=(NEGATIVE, SUBNORMAL))),
        KernelSpec("heat_steps_1d", ("u", "alpha", "steps"), _heat_cases(True),
                   _heat_steps_rule, edges=_sweep_1d(_edge_heat(True), FLOATS)),
        KernelSpec("laplacian_2d", ("u",), _laplacian_cases, _laplacian_rule, launch="2d",
                   edges=_sweep_shapes(lambda s: s.sweep_shapes_2d, _edge_laplacian, FLOATS,
                                       kinds=(NEGATIVE, SUBNORMAL))),
        KernelSpec("halo_exchange_1d", ("a", "width"), _halo_cases(1), _exact_copy,
                   in_place="a", edges=_sweep_halo(1)),
        KernelSpec("halo_exchange_2d", ("a", "width"), _halo_cases(2), _exact_copy,
                   in_place="a", launch="2d", edges=_sweep_halo(2)),
        KernelSpec("matmul", ("a", "b"), _matmul_cases, _matmul_rule, launch="2d",
                   edges=_sweep_shapes(lambda s: s.sweep_matmul, _edge_matmul, NUMERIC,
                                       kinds=(NEGATIVE, SUBNORMAL))),
        KernelSpec("matmul_tiled", ("a", "b"), _matmul_cases, _matmul_rule, launch="2d",
                   square_blocks=True, launch_invariant=False,
                   edges=_sweep_shapes(lambda s: s.sweep_matmul, _edge_matmul, NUMERIC,
                                       kinds=(NEGATIVE, SUBNORMAL))),
    )
}


#: Modules adding the specs of further families (each has a ``SPECS`` table).
FAMILY_SPEC_MODULES = ("conformance.specs_ufuncs", "conformance.specs_transforms",
                       "conformance.specs_multi_device", "conformance.specs_fused")
for _module in FAMILY_SPEC_MODULES:
    SPECS.update(importlib.import_module(_module).SPECS)


def spec_for(kernel: str) -> KernelSpec:
    """The spec of ``kernel``; a one-line error names the known kernels."""
    try:
        return SPECS[kernel]
    except KeyError:
        raise KeyError(f"no conformance spec for kernel {kernel!r}; "
                       f"known: {', '.join(SPECS)}") from None


__all__ = ["SPECS", "Case", "Edge", "KernelSpec", "spec_for"]
