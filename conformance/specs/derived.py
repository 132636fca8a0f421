"""The derived part of the boundary sweep: every value class of every array argument, every
view of every input, the edges of every scalar parameter and of the launch, built from the
kernel's catalog entry (:mod:`pytest_gpucheck.reference_kernels.value_classes`), never listed
per kernel.

Each class is written into a *base case*: a finite case of the kernel's own sweep (the
largest of its plain size or shape cases in that dtype, so the other arguments keep values
the contract admits), or for a spec without a sweep one made by its repeat builder at sweep
size, or else the simplest case its strategy draws with every array non-empty.  Only the one
argument changes, so a failure names the class and the argument: ``boundary sweep 41/60:
x: NaN middle``.

:func:`plan` is the single source of what is tried: the sweep runs its edges and
``scripts/coverage_table.py`` prints its rows (kernel x argument x class -> swept, or
excluded with the contract's reason), which ``docs/kernels.md`` holds and a test keeps equal.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.checking.strategies import Sizing
from pytest_gpucheck.conformance.specs.base import (
    MIXED,
    SWEEP_SEED,
    Case,
    Edge,
    KernelSpec,
    sweep_values,
)
from pytest_gpucheck.reference_kernels import value_classes as vc


@dataclass(frozen=True)
class Row:
    """One line of the coverage table."""

    kernel: str
    argument: str
    value_class: str
    #: ``swept``, ``excluded`` or ``checked`` (a relevance check).
    status: str
    reason: str = ""


@dataclass
class Plan:
    """What the derived sweep tries for one kernel: its edges and the table's rows."""

    edges: list[Edge] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    #: Scalar parameters with a relevance check: name -> the edges' cases, in order.
    relevance: dict[str, list[Case]] = field(default_factory=dict)


def _finite_arrays(case: Case) -> bool:
    arrays = list(case.arrays.values())
    return bool(arrays) and all(a.size and (a.dtype.kind != "f" or bool(np.all(np.isfinite(a))))
                                for a in arrays)


def _case_dtype(case: Case) -> np.dtype | None:
    for value in case.inputs.values():
        if isinstance(value, np.ndarray):
            return value.dtype
    dtype = case.inputs.get("dtype")
    if dtype is None:  # an index map: the reference takes (shape, dtype)
        dtype = next((v for v in case.reference_args if isinstance(v, np.dtype)), None)
    return np.dtype(dtype) if dtype is not None else None


#: The largest base case taken from a spec's sweep (elements over all its arrays).
BASE_CAP = 4096


def base_cases(spec: KernelSpec, sizing: Sizing) -> dict[str, Case]:
    """One finite base case per dtype of the kernel (see the module's docstring)."""
    if spec.statistical:  # no arrays: the parameters' edges vary one plain case
        n = sizing.samples[0]
        return {name: Case({"seed": 0, "n": n, "dtype": np.dtype(name)},
                           f"n={n}, dtype={name}", (n,)) for name in spec.entry.dtypes}
    found: dict[str, tuple[int, Case]] = {}
    for edge in spec.edges(sizing):
        case = edge.case
        dtype = _case_dtype(case)
        plain = edge.what.startswith(("n=", "shape=", "width="))
        arrays_ok = _finite_arrays(case) if vc.array_arguments(spec.entry) else True
        if dtype is None or not plain or not arrays_ok:
            continue
        size = sum(a.size for a in case.arrays.values()) or math.prod(case.domain)
        if size <= BASE_CAP and size > found.get(dtype.name, (0, case))[0]:
            found[dtype.name] = (size, case)
    if not found and spec.large is not None and not spec.statistical:
        small = dataclasses.replace(
            sizing, repeat_size=sizing.sweep_block + 1, repeat_shape_2d=(3, 5),
            repeat_shape_3d=(2, 3, 5), repeat_matmul=(3, 5, 4))
        rng = np.random.default_rng(SWEEP_SEED + 2)
        for name in spec.entry.dtypes:
            case = spec.large(small, spec.entry, np.dtype(name), "mixed", rng)
            if _finite_arrays(case):
                found[name] = (0, case)
    if not found and not spec.statistical:
        rng = np.random.default_rng(SWEEP_SEED + 3)
        for name in spec.entry.dtypes:
            made = (spec.base or vector_base)(sizing, spec.entry, np.dtype(name), rng)
            if made is not None:
                found[name] = (0, made)
    return {name: found[name][1] for name in spec.entry.dtypes if name in found}


def vector_base(sizing: Sizing, entry: Any, dtype: np.dtype,
                rng: np.random.Generator) -> Case | None:
    """A base case of 1-D arrays of ``block + 1`` elements for every array argument (small
    integer values of mixed signs), and each scalar parameter at the last edge of its
    domain: for a spec without a sweep whose arguments are vectors of one size."""
    n = sizing.sweep_block + 1
    parameters = {p.name: p for p in entry.parameters}
    inputs: dict[str, Any] = {}
    for name in entry.arguments:
        if name in parameters:
            value = parameters[name].edges[-1]
            inputs[name] = dtype.type(value) if parameters[name].passed_as == "data" else value
        else:
            inputs[name] = sweep_values((n,), dtype, MIXED, 2**5, rng, integers=True)
    return Case(inputs, f"n={n}, dtype={dtype}", (n,))


def _with(case: Case, argument: str, value: Any, what: str, entry: Any = None) -> Case:
    """``case`` with ``argument`` replaced; a size the reference also takes (``nbins``) is
    replaced there too."""
    extra = case.reference_args
    sizes = entry.sizes if entry is not None else ()
    if argument in sizes and len(extra) == len(sizes):
        extra = tuple(value if name == argument else old for name, old in zip(sizes, extra,
                                                                              strict=True))
    del what  # the sweep's label names the class; the case keeps its own words
    return Case({**case.inputs, argument: value}, case.describe, case.domain, extra)


def _launch_edges(spec: KernelSpec, sizing: Sizing, case: Case) -> list[LaunchConfig]:
    """One thread per block (for a grid-stride kernel: one thread in all), and the largest
    block the sizing allows, square where the kernel's blocks must be."""
    domain = case.domain
    extents = tuple(reversed(domain))  # x first
    if spec.launch == "grid-stride":
        return [LaunchConfig((1,), (1,))]
    ones = tuple(1 for _ in extents)
    smallest = LaunchConfig(tuple(max(1, e) for e in extents), ones)
    if len(extents) == 1:
        block: tuple[int, ...] = (sizing.max_threads,)
    else:
        side = max(s for s in sizing.block_sides if s ** len(extents) <= sizing.max_threads)
        block = (side,) * len(extents)
    largest = LaunchConfig(tuple(max(1, math.ceil(e / b)) for e, b in zip(extents, block,
                                                                          strict=True)), block)
    return [smallest, largest]


def _view_base(bases: dict[str, Case], argument: str, view: str) -> str:
    """The base case a view of ``argument`` is built on: the one whose array has the most
    elements along its shortest axis (then the most elements).  A transposed view of an
    array with an axis of length 1 is the same memory order as the array (both C- and
    F-contiguous): on such a base the class would try nothing; a strided or offset view of
    a one-element array neither."""
    def extent(name: str) -> tuple[int, int]:
        array = bases[name].inputs.get(argument)
        if not isinstance(array, np.ndarray) or not array.size:
            return (0, 0)
        return (min(array.shape), array.size)

    del view  # every view wants a base where each axis has several elements
    return max(bases, key=extent)


def plan(spec: KernelSpec, sizing: Sizing) -> Plan:
    """The derived edges and coverage rows of ``spec`` on ``sizing``."""
    entry = spec.entry
    result = Plan()
    bases = base_cases(spec, sizing)
    turn: dict[str, int] = {}
    arrays = vc.array_arguments(entry)
    for argument in arrays:
        role = vc.role_of(entry, argument)
        kinds = list(dict.fromkeys("f" if np.dtype(d).kind == "f" else "i" for d in bases))
        dtypes_of = {kind: [d for d in bases if ("f" if np.dtype(d).kind == "f" else "i") == kind]
                     for kind in kinds}
        for kind in kinds:
            for value_class in vc.classes_for("float64" if kind == "f" else "int64", role=role):
                excluded = vc.exclusion(entry, argument, value_class.name)
                if excluded:
                    result.rows.append(Row(entry.name, argument, value_class.name, "excluded",
                                           excluded.reason))
                    continue
                names = dtypes_of[kind]
                if value_class.widest:
                    names = [max(names, key=lambda d: np.dtype(d).itemsize)]
                elif not value_class.every_dtype:
                    index = turn.get(kind, 0)
                    turn[kind] = index + 1
                    names = [names[index % len(names)]]
                built = 0
                for name in names:
                    case = bases[name]
                    original = case.inputs.get(argument)
                    if not isinstance(original, np.ndarray) or not original.size:
                        continue
                    values = vc.apply(value_class.name, np.array(original, copy=True))
                    what = f"{argument}: {value_class.name}"
                    result.edges.append(Edge(what, _with(case, argument, values, what)))
                    built += 1
                if built:
                    result.rows.append(Row(entry.name, argument, value_class.name, "swept",
                                           ", ".join(names)))
        if role == "input" and bases:
            first = next(iter(bases.values()))
            original = first.inputs.get(argument)
            ndim = original.ndim if isinstance(original, np.ndarray) else 1
            for view in vc.views_for(role, ndim):
                excluded = vc.exclusion(entry, argument, view)
                if excluded:
                    result.rows.append(Row(entry.name, argument, view, "excluded",
                                           excluded.reason))
                    continue
                layout = vc.VIEW_LAYOUTS[view]
                name = _view_base(bases, argument, view)
                what = f"{argument}: {view}"
                result.edges.append(Edge(what, _with(bases[name], argument,
                                                     bases[name].inputs[argument], what),
                                         layouts=((argument, layout),)))
                result.rows.append(Row(entry.name, argument, view, "swept", name))
    for parameter in entry.parameters:
        first_dtype = next(iter(bases), None)
        cases: list[Case] = []
        if first_dtype is not None:
            name = first_dtype
            base = bases[name]
            for value in parameter.edges:
                typed = np.dtype(name).type(value) if parameter.passed_as == "data" else value
                what = f"{parameter.name}={value} (an edge of its domain)"
                cases.append(_with(base, parameter.name, typed, what, entry))
                result.edges.append(Edge(what, cases[-1]))
        edges = ", ".join(map(str, parameter.edges))
        result.rows.append(Row(entry.name, parameter.name, f"edges {edges}",
                               "swept" if cases else "excluded",
                               first_dtype or "no base case to vary it in"))
        if parameter.no_relevance:
            result.rows.append(Row(entry.name, parameter.name, "relevance", "excluded",
                                   parameter.no_relevance))
        elif len(cases) >= 2:
            result.relevance[parameter.name] = cases
            result.rows.append(Row(entry.name, parameter.name, "relevance", "checked"))
    if spec.entry.launch and bases and not spec.statistical:
        case = next(iter(bases.values()))
        for launch in _launch_edges(spec, sizing, case):
            what = f"launch {launch} (an edge of the launch sizes)"
            result.edges.append(Edge(what, case, launches=(launch,)))
        result.rows.append(Row(entry.name, "launch", f"edges: {vc.LAUNCH_EDGES}", "swept"))
        result.rows.append(Row(entry.name, "launch", "relevance", "excluded",
                               vc.LAUNCH_NO_RELEVANCE))
    return result


_PLANS: dict[tuple[str, Sizing], Plan] = {}


def plan_for(spec: KernelSpec, sizing: Sizing) -> Plan:
    """:func:`plan`, built once per kernel and sizing (every test of a kernel shares it)."""
    key = (spec.name, sizing)
    if key not in _PLANS:
        _PLANS[key] = plan(spec, sizing)
    return _PLANS[key]


_OWN: dict[tuple[str, Sizing], tuple[Any, list[Edge]]] = {}


def sweep_edges(spec: KernelSpec, sizing: Sizing) -> list[Edge]:
    """The whole boundary sweep: the spec's own edge cases, then the derived ones.  Both are
    built once per kernel, entry and sizing (deterministic, from a fixed seed): every backend
    of a process runs the same case objects, so the harness computes each case's reference
    once (``harness._reference``)."""
    key = (spec.name, sizing)
    entry = spec.entry
    if key not in _OWN or _OWN[key][0] is not entry:
        _OWN[key] = (entry, spec.edges(sizing))
    edges = _OWN[key][1] + plan_for(spec, sizing).edges
    for edge in edges:
        _SWEEP_CASES[id(edge.case)] = edge.case
    return edges


#: The sweep's case objects by id (each held here, so its id stays its own).
_SWEEP_CASES: dict[int, Case] = {}


def is_sweep_case(case: Case) -> bool:
    """Whether ``case`` is one of the sweep's built-once case objects (a drawn case is not)."""
    return _SWEEP_CASES.get(id(case)) is case


__all__ = ["BASE_CAP", "Plan", "Row", "base_cases", "is_sweep_case", "plan", "plan_for",
           "sweep_edges", "vector_base"]
