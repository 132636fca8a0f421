"""Value classes derived from each argument's dtype and role, and the kernels' parameters.

Contract coverage by construction: every array argument of every catalog kernel is tried,
in the boundary sweep (so the derandomized ``ci`` profile meets every class on every run),
with each class its dtype and role admit:

* floats: NaN first, in the middle, last, everywhere; ``+inf``; ``-inf``; ``-0.0``;
  subnormal; fractional (non-integer) values; the dtype's extremes; all negative;
* integers: the dtype's extremes, all negative, zero;
* inputs (not an argument updated in place): the strided, transposed (2-D) and offset views.

Nothing lists classes per kernel: the conformance specs derive them from the entry's dtypes
and arguments (``conformance/specs/derived.py``).  A kernel's entry may exclude a class only
with a stated reason (``Entry.class_exclusions``, each an :class:`Exclusion`: the contract
leaves the result undefined there).  A scalar parameter (:class:`Parameter`, listed in
``Entry.parameters``) names the edges of its domain, tried in the sweep, and either is shown
to matter (the relevance check: moving it between two edges changes the reference's result,
so the implementation's must change too) or says why no such check applies.
``scripts/coverage_table.py`` writes what the specs derive, exclusions and reasons included,
into ``docs/kernels.md``.

This module imports nothing but NumPy (as the rest of ``reference_kernels``).

>>> [c.name for c in classes_for("float32", role="input")][:4]
['NaN first', 'NaN middle', 'NaN last', 'NaN everywhere']
>>> apply("integer extremes", np.zeros(5, np.int32)).tolist()
[2147483647, -2147483647, 2147483646, 0, -2147483648]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Role = Literal["input", "in place"]

#: The view classes: how an input reaches the kernel (``checking.strategies`` builds them).
STRIDED, TRANSPOSED, OFFSET = "strided view", "transposed view", "offset view"
#: The layout each view class is built with (names of ``checking.strategies``' layouts).
VIEW_LAYOUTS = {STRIDED: "strided", TRANSPOSED: "transposed", OFFSET: "offset"}


def _put(positions: Callable[[int], list[int]], value: Callable[[np.dtype], Any]) -> Callable[
        [np.ndarray], np.ndarray]:
    """A class that writes ``value(dtype)`` at ``positions(size)`` of the flattened array."""
    def apply(values: np.ndarray) -> np.ndarray:
        flat = values.reshape(-1)
        for index in positions(flat.size):
            flat[index] = value(values.dtype)
        return values

    return apply


def _first(size: int) -> list[int]:
    return [0]


def _middle(size: int) -> list[int]:
    return [size // 2]


def _last(size: int) -> list[int]:
    return [size - 1]


def _everywhere(size: int) -> list[int]:
    return list(range(size))


def _subnormal(values: np.ndarray) -> np.ndarray:
    tiny = np.finfo(values.dtype).smallest_subnormal
    signs = np.where(np.arange(values.size) % 2 == 0, 1, -1).reshape(values.shape)
    steps = (np.arange(values.size) % 1000 + 1).reshape(values.shape)
    values[...] = (signs * steps * float(tiny)).astype(values.dtype)
    return values


def _fractional(values: np.ndarray) -> np.ndarray:
    # Non-integer values of mixed signs, a few digits each side of the point: only these
    # show an accumulator narrower than the data (integer values sum exactly in any order).
    index = np.arange(values.size).reshape(values.shape)
    values[...] = ((index * 0.6180339887 % 1.0) - 0.5) * 7.3 + np.where(index % 3 == 0, 0.01, 0)
    return values


def _float_extremes(values: np.ndarray) -> np.ndarray:
    info = np.finfo(values.dtype)
    flat = values.reshape(-1)
    flat[0] = info.max
    flat[-1] = info.min
    return values


def _integer_extremes(values: np.ndarray) -> np.ndarray:
    # The largest value first, the smallest last, and beside them the values one inside
    # each extreme, which float64 cannot hold for int64 (2**63 - 2 rounds to 2**63): a kernel
    # that goes through floats (numbagg's int64 nanmax) returns something else.
    info = np.iinfo(values.dtype)
    flat = values.reshape(-1)
    if flat.size >= 3:
        flat[flat.size // 2] = info.max - 1
    if flat.size >= 4:
        flat[1] = info.min + 1
    flat[0] = info.max
    flat[-1] = info.min
    return values


def _all_negative(values: np.ndarray) -> np.ndarray:
    # Small magnitudes (what the kernel's own sweep drew), made strictly negative: a maximum
    # started at 0, or an unsigned intermediate, shows.
    magnitude = np.abs(values.astype(np.float64))
    values[...] = -(magnitude + 1).astype(values.dtype)
    return values


def _zero(values: np.ndarray) -> np.ndarray:
    values[...] = 0
    return values


@dataclass(frozen=True)
class ValueClass:
    """One class of values an array argument is tried with."""

    name: str
    #: The dtype kinds it applies to: ``"f"`` floats, ``"i"`` integers.
    kind: str
    #: Writes the class into (a copy of) a finite array drawn by the kernel's sweep.
    make: Callable[[np.ndarray], np.ndarray]
    #: Tried in every dtype of its kind (the extremes differ per dtype), else in one dtype
    #: of the kind, taken in turn.
    every_dtype: bool = False
    #: Tried in the widest dtype of its kind (not taken in turn): fractional values, whose
    #: bug is an intermediate narrower than the data, which only a dtype wider than that
    #: intermediate shows (float32 inputs of a float64 kernel are no bug in a float32 one).
    #: Taken in turn it fell in float32 for every argument of a two-argument kernel (each
    #: argument takes the same even number of turns).
    widest: bool = False


FLOAT_CLASSES: tuple[ValueClass, ...] = (
    ValueClass("NaN first", "f", _put(_first, lambda d: np.nan)),
    ValueClass("NaN middle", "f", _put(_middle, lambda d: np.nan)),
    ValueClass("NaN last", "f", _put(_last, lambda d: np.nan)),
    ValueClass("NaN everywhere", "f", _put(_everywhere, lambda d: np.nan)),
    ValueClass("+inf", "f", _put(_middle, lambda d: np.inf)),
    ValueClass("-inf", "f", _put(_middle, lambda d: -np.inf)),
    ValueClass("-0.0", "f", _put(_everywhere, lambda d: -0.0)),
    ValueClass("subnormal", "f", _subnormal),
    ValueClass("fractional", "f", _fractional, widest=True),
    ValueClass("float extremes", "f", _float_extremes, every_dtype=True),
    ValueClass("all negative", "f", _all_negative),
)
INTEGER_CLASSES: tuple[ValueClass, ...] = (
    ValueClass("integer extremes", "i", _integer_extremes, every_dtype=True),
    ValueClass("all negative", "i", _all_negative),
    ValueClass("zero", "i", _zero),
)
BY_NAME: dict[tuple[str, str], ValueClass] = {
    (c.kind, c.name): c for c in FLOAT_CLASSES + INTEGER_CLASSES}


def classes_for(dtype: Any, *, role: Role) -> list[ValueClass]:
    """The value classes an argument of ``dtype`` admits (its role adds no value class; views
    are :func:`views_for`)."""
    del role  # every role gets every value class of its dtype
    kind = "f" if np.dtype(dtype).kind == "f" else "i"
    return [c for c in FLOAT_CLASSES + INTEGER_CLASSES if c.kind == kind]


def views_for(role: Role, ndim: int) -> list[str]:
    """The view classes of an argument: inputs only (an argument updated in place is handed
    inside guard bands), transposed for 2-D arrays."""
    if role != "input":
        return []
    return [STRIDED] + ([TRANSPOSED] if ndim == 2 else []) + [OFFSET]


def apply(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` (modified and returned) with the class ``name`` written in."""
    kind = "f" if values.dtype.kind == "f" else "i"
    with np.errstate(over="ignore", invalid="ignore"):
        return BY_NAME[(kind, name)].make(values)


@dataclass(frozen=True)
class Exclusion:
    """A class a kernel's argument is not tried with, and the contract's reason."""

    #: The argument, or ``"*"`` for every array argument of the kernel.
    argument: str
    #: A value class name (:data:`FLOAT_CLASSES`, :data:`INTEGER_CLASSES`) or a view class.
    value_class: str
    reason: str

    def covers(self, argument: str, value_class: str) -> bool:
        return self.argument in ("*", argument) and self.value_class == value_class


@dataclass(frozen=True)
class Parameter:
    """A scalar parameter of a kernel: the edges of its documented domain, tried in the
    boundary sweep, and whether moving it must change the result."""

    name: str
    #: Values at the edges of its domain (0, 1, the maximum the contract allows).
    edges: tuple[Any, ...]
    #: Where no relevance check applies: why.  Empty: the check applies (the implementation's
    #: result must change where the reference's changes between two edges).
    no_relevance: str = ""
    #: The dtype the value is passed in: ``"data"`` the case's dtype (``alpha``), else a
    #: Python int.
    passed_as: Literal["data", "int"] = "int"


#: Launch sizes, a parameter of every implementation that takes ``launch``.
LAUNCH_NO_RELEVANCE = ("the result may not depend on the launch (L: two launches must give the "
                       "same bits), and which thread computed an element cannot be observed")
LAUNCH_EDGES = "one thread per block; the largest block the device allows"


def array_arguments(entry: Any) -> tuple[str, ...]:
    """The entry's array arguments: its arguments less its scalar parameters."""
    scalars = {parameter.name for parameter in entry.parameters}
    return tuple(name for name in entry.arguments if name not in scalars)


def role_of(entry: Any, argument: str) -> Role:
    """``in place`` for the argument the kernel updates, else ``input``."""
    return "in place" if argument == entry.in_place else "input"


def exclusion(entry: Any, argument: str, value_class: str) -> Exclusion | None:
    """The entry's exclusion of ``value_class`` for ``argument``, or None."""
    return next((e for e in entry.class_exclusions if e.covers(argument, value_class)), None)


__all__ = ["BY_NAME", "FLOAT_CLASSES", "INTEGER_CLASSES", "LAUNCH_EDGES",
           "LAUNCH_NO_RELEVANCE", "OFFSET", "STRIDED", "TRANSPOSED", "VIEW_LAYOUTS", "Exclusion",
           "Parameter", "ValueClass", "apply", "array_arguments", "classes_for", "exclusion",
           "role_of", "views_for"]
