"""Assertion helpers that use the derived tolerances and print a reproducer.

Every helper hides its own frame (``__tracebackhide__``) and fails with one
message shape, in the manner of array-api-tests::

    out.dtype=float32, but should be float64 [vector_add(n=7, dtype=float64) on cupy:raw]

followed by the evidence (error sizes, the first mismatching indices) and,
when a :class:`CheckContext` is given, a reproducer: backend, kernel, launch
configuration, shapes, dtypes, strides, the hypothesis seed and the command
that reruns exactly this example.

Each check also exists as a ``*_problem`` function that returns the message
(or None) instead of raising, so a suite can report every failed check of a
launch at once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from pytest_gpucheck.checking.guards import GuardReadback, same_bits
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.checking.tolerance import Tolerance, abs_error, is_float, ulp_error

#: How many mismatching elements a message lists.
SHOWN = 5


class LazyText:
    """Text made when first shown: a reproducer's array values, described for every call of
    every case but read only when a case fails (``np.array2string`` of each input was a
    third of the boundary sweep's time on NumPy)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make: Callable[[], str] | None = make
        self._text = ""

    def __str__(self) -> str:
        if self._make is not None:
            self._text, self._make = self._make(), None
        return self._text

    def __repr__(self) -> str:
        return repr(str(self))


@dataclass
class CheckContext:
    """Where a result came from: enough to read the failure and to rerun it."""

    kernel: str
    backend: str
    implementation: str = "bundled"
    #: The drawn case in a few words, e.g. ``n=7, dtype=float32``.
    case: str = ""
    launch: LaunchConfig | None = None
    #: Argument name -> ``shape=(7,) strides=(16,) dtype=float32 (strided)`` (made when
    #: shown where it is a :class:`LazyText`).
    arrays: dict[str, str | LazyText] = field(default_factory=dict)
    seed: int | None = None
    profile: str | None = None
    nodeid: str | None = None
    device: str = ""
    #: Further options the rerun needs (``--gpu-conformance``, ``--gpu-impls=user``).
    rerun_options: tuple[str, ...] = ()
    #: Arguments that select the test from the folder pytest ran in (``path::name``, or
    #: ``-k name`` for the bundled suites); ``nodeid`` when empty.
    rerun_selector: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        """``[vector_add(n=7, dtype=float32) on cupy:raw]``: the end of every message."""
        return f"[{self.kernel}({self.case}) on {self.backend}:{self.implementation}]"

    def rerun_command(self) -> str:
        """The pytest command that reruns this test with the same hypothesis seed."""
        if not self.nodeid and not self.rerun_selector:
            return ""
        parts = ["pytest", *(self.rerun_selector or (str(self.nodeid),)),
                 f"--gpu-backends={self.backend}"]
        if self.seed is not None:
            parts.append(f"--hypothesis-seed={self.seed}")
        if self.profile:
            parts.append(f"--hypothesis-profile={self.profile}")
        parts.extend(self.rerun_options)
        return " ".join(shlex.quote(part) for part in parts)

    def reproducer(self) -> str:
        """The multi-line reproducer printed under a failure."""
        lines = ["reproducer:"]
        device = f" ({self.device})" if self.device else ""
        lines.append(f"  backend: {self.backend}{device}; implementation: {self.implementation}")
        lines.append(f"  kernel: {self.kernel}({self.case})")
        if self.launch is not None:
            lines.append(f"  launch: {self.launch}")
        for name, layout in self.arrays.items():
            lines.append(f"  {name}: {layout}")
        if self.seed is not None:
            profile = f" (profile {self.profile})" if self.profile else ""
            lines.append(f"  hypothesis seed: {self.seed}{profile}")
        command = self.rerun_command()
        if command:
            lines.append(f"  rerun: {command}")
        return "\n".join(lines)


def _tag(context: CheckContext | str | None) -> str:
    if context is None:
        return ""
    if isinstance(context, CheckContext):
        return f" {context.tag}"
    return f" [{context}]"


def _fail(problem: str, context: CheckContext | str | None) -> None:
    __tracebackhide__ = True
    if isinstance(context, CheckContext):
        problem = f"{problem}\n{context.reproducer()}"
    raise AssertionError(problem)


def _index(index: tuple[int, ...]) -> str:
    return ", ".join(str(int(i)) for i in index)


#: Arrays of at most this many elements are shown whole in messages; larger ones as their
#: first and last few elements with their size (a hypothesis draw of 127 elements printed
#: whole took 35 lines, and the values of a one-element sweep case were not shown at all).
SHOWN_WHOLE = 16


def show_values(values: Any) -> str:
    """An array for a message: whole when small, else summarised (``[1., 2., 3., ..., 5.,
    6., 7.] (127 values)``)."""
    array = np.asarray(values)
    text = np.array2string(array, separator=", ", threshold=SHOWN_WHOLE, edgeitems=3,
                           max_line_width=10_000).replace("\n", "")
    return text if array.size <= SHOWN_WHOLE else f"{text} ({array.size} values)"


def _show(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return repr(value.item() if isinstance(value, np.generic) else value)


# -- problems (return a message or None) --------------------------------------------------


def dtype_problem(actual: DTypeLike, expected: DTypeLike, context: CheckContext | str | None,
                  *, name: str = "out") -> str | None:
    """``out.dtype=float32, but should be float64 [...]`` or None."""
    if np.dtype(actual) == np.dtype(expected):
        return None
    return f"{name}.dtype={np.dtype(actual)}, but should be {np.dtype(expected)}{_tag(context)}"


def shape_problem(actual: tuple[int, ...], expected: tuple[int, ...],
                  context: CheckContext | str | None, *, name: str = "out") -> str | None:
    """``out.shape=(7,), but should be (1,) [...]`` or None."""
    if tuple(actual) == tuple(expected):
        return None
    return f"{name}.shape={tuple(actual)}, but should be {tuple(expected)}{_tag(context)}"


def values_problem(actual: np.ndarray, expected: np.ndarray, rule: Tolerance,
                   context: CheckContext | str | None, *, name: str = "out",
                   poison: np.ndarray | None = None,
                   second: tuple[Any, np.ndarray] | None = None) -> str | None:
    """Compare values under ``rule``; describe the mismatches or return None.

    ``poison`` is the value the output started with: elements still holding
    it are reported as never written.  A NaN poison cannot tell a missing
    write from an accumulation into ``out`` (NaN plus anything is NaN), so
    ``second`` may carry ``(value, result)``: the same launch started from a
    different, finite ``value``.  An element holding its initial value in both
    runs was never written; a wrong one that changes with the initial value
    read or accumulated into the uninitialised output.
    """
    got = np.asarray(actual)
    want = np.asarray(expected)
    if got.shape != want.shape:
        return shape_problem(got.shape, want.shape, context, name=name)
    bad = rule.mismatches(got, want)
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    where = [tuple(i) for i in np.argwhere(bad)]
    first = where[0]
    head = (f"{name}[{_index(first)}]={_show(got[first])}, but should be "
            f"{_show(want[first])}{_tag(context)}")
    lines = [head]
    error = abs_error(got, want)[bad]
    if error.dtype == object:  # integers: the exact error, every digit (no rounding to %g)
        stats = f"  {count} of {want.size} elements differ; max abs error {max(error)}"
    elif not np.all(np.isnan(error)):
        stats = f"  {count} of {want.size} elements differ; max abs error {np.nanmax(error):.6g}"
    else:
        stats = f"  {count} of {want.size} elements differ (NaN)"
    if is_float(want.dtype):
        ulps = ulp_error(got, want)[bad]
        finite = ulps[np.isfinite(ulps)]
        if finite.size:
            stats += f", max ULP error {finite.max():.3g}"
    lines.append(f"{stats}; rule: {rule}")
    shown = ", ".join(
        f"{name}[{_index(i)}]={_show(got[i])} (expected {_show(want[i])})" for i in where[:SHOWN]
    )
    more = f", ... ({count - SHOWN} more)" if count > SHOWN else ""
    lines.append(f"  first mismatches: {shown}{more}")
    if poison is not None and got.size:
        unwritten = _holds(got, poison) & bad
        if second is None:
            lines.extend(_located(unwritten, "were never written (still the poison value)"))
        else:
            value, again = second
            again = np.asarray(again)
            kept = unwritten & _holds(again, value)
            lines.extend(_located(kept, "were never written (they kept the initial value of "
                                        "out in two launches with different initial values)"))
            lines.extend(_located(
                bad & ~kept & ~same_bits(got, again),
                f"depend on what out held before the call (they change when out starts at "
                f"{_show(np.asarray(value))} instead of the poison): the kernel reads or "
                f"accumulates into out, which starts uninitialised for this kernel; write "
                f"each element once instead"))
    return "\n".join(lines)


def _holds(values: np.ndarray, initial: Any) -> np.ndarray:
    """Elements of ``values`` bitwise equal to ``initial``."""
    return same_bits(values, np.broadcast_to(np.asarray(initial, dtype=values.dtype),
                                             values.shape).copy())


def _located(mask: np.ndarray, what: str) -> list[str]:
    count = int(np.count_nonzero(mask))
    if not count:
        return []
    first = ", ".join(f"[{_index(tuple(i))}]" for i in np.argwhere(mask)[:SHOWN])
    return [f"  {count} of them {what}, first at {first}"]


def unchanged_problem(before: np.ndarray, after: np.ndarray,
                      context: CheckContext | str | None, *, name: str) -> str | None:
    """``input b was modified: ...`` when ``after`` differs bitwise from ``before``."""
    if before.shape != after.shape:
        return f"input {name} changed shape to {after.shape}, but should stay " \
               f"{before.shape}{_tag(context)}"
    changed = ~same_bits(np.ascontiguousarray(after), np.ascontiguousarray(before))
    count = int(np.count_nonzero(changed))
    if count == 0:
        return None
    where = [tuple(i) for i in np.argwhere(changed)][:SHOWN]
    shown = ", ".join(f"[{_index(i)}] {_show(before[i])} -> {_show(after[i])}" for i in where)
    return (f"input {name} was modified ({count} element(s) of its buffer changed), "
            f"but inputs must not be touched{_tag(context)}\n  first changes: {shown}")


def guard_problem(readback: GuardReadback, context: CheckContext | str | None) -> str | None:
    """``wrote 1 element past the end of out: index 7 [...]`` or None."""
    if readback.ok:
        return None
    return f"{readback.describe()}, but should write only inside {readback.name}{_tag(context)}"


# -- assertions (raise AssertionError) ------------------------------------------------------


def assert_dtype(actual: DTypeLike, expected: DTypeLike, context: CheckContext | str | None = None,
                 *, name: str = "out") -> None:
    """Assert a result's dtype."""
    __tracebackhide__ = True
    problem = dtype_problem(actual, expected, context, name=name)
    if problem:
        _fail(problem, context)


def assert_shape(actual: tuple[int, ...], expected: tuple[int, ...],
                 context: CheckContext | str | None = None, *, name: str = "out") -> None:
    """Assert a result's shape."""
    __tracebackhide__ = True
    problem = shape_problem(actual, expected, context, name=name)
    if problem:
        _fail(problem, context)


def assert_matches_reference(actual: Any, expected: Any, rule: Tolerance,
                             context: CheckContext | str | None = None, *,
                             name: str = "out") -> None:
    """Assert ``actual`` has the dtype and shape of ``expected`` and matches it under ``rule``.

    ``actual`` must already be on the host (``gpu_backend.to_host(result)``).
    ``rule`` comes from :mod:`pytest_gpucheck.checking.tolerance` (``exact``,
    ``within_ulps``, ``sum_rule``, ...).
    """
    __tracebackhide__ = True
    got = np.asarray(actual)
    want = np.asarray(expected)
    for problem in (
        dtype_problem(got.dtype, want.dtype, context, name=name),
        shape_problem(got.shape, want.shape, context, name=name),
        values_problem(got, want, rule, context, name=name),
    ):
        if problem:
            _fail(problem, context)


def assert_unchanged(before: np.ndarray, after: np.ndarray,
                     context: CheckContext | str | None = None, *, name: str = "input") -> None:
    """Assert an input is bit-for-bit what it was before the call."""
    __tracebackhide__ = True
    problem = unchanged_problem(np.asarray(before), np.asarray(after), context, name=name)
    if problem:
        _fail(problem, context)


def assert_guards_intact(readback: GuardReadback,
                         context: CheckContext | str | None = None) -> None:
    """Assert nothing was written outside a
    :class:`~pytest_gpucheck.checking.guards.GuardedBuffer`."""
    __tracebackhide__ = True
    problem = guard_problem(readback, context)
    if problem:
        _fail(problem, context)


__all__ = [
    "SHOWN_WHOLE",
    "CheckContext",
    "LazyText",
    "assert_dtype",
    "assert_guards_intact",
    "assert_matches_reference",
    "assert_shape",
    "assert_unchanged",
    "dtype_problem",
    "guard_problem",
    "shape_problem",
    "show_values",
    "unchanged_problem",
    "values_problem",
]
