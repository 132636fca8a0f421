"""Framework defects a bundled implementation meets, recorded narrowly as known outcomes.

A cell of the matrix whose framework is wrong for some inputs would otherwise
be red on a correct implementation (the first H100 run: numba-cuda's
``@vectorize`` / ``@guvectorize`` on ``target='cuda'``).  Each entry names the
cell (kernel, backend, implementation), the cases that trigger the defect
(``when``) and what the failure looks like (``error``, searched in the
harness's problem lines); the harness (:class:`Tracker`) then:

* runs the entry's minimal case first, so every run meets the defect;
* takes a failing case that matches both ``when`` and ``error`` as the defect,
  and checks every other case as usual (a failure outside the entry fails);
* ends the item as xfail, with the reason, the reproducer and the upstream
  reference, when the defect was seen and nothing else failed;
* fails the item when matching cases ran and none showed the defect (it no
  longer reproduces: remove the entry, the framework was fixed).

So the xfail is strict: a cell without the defect never reads as xfail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.conformance.specs import Case


@dataclass(frozen=True)
class KnownDefect:
    """One framework defect in one cell, with its trigger, its symptom and its source."""

    name: str
    kernel: str
    backend: str
    implementation: str
    #: The cases that meet the defect (the narrower, the more of the cell is checked).
    when: Callable[[Case], bool]
    #: A regular expression every problem line of a defective case matches.
    error: str
    #: What is wrong, in one sentence, with the framework version it was seen with.
    what: str
    #: The upstream report or the nearest one, and where in the framework's source.
    upstream: str
    #: A standalone reproducer for the upstream report.
    reproducer: str
    #: The smallest case that meets it; run first in every run of the cell.
    minimal: Callable[[], Case]

    def applies(self, kernel: str, backend: str, implementation: str) -> bool:
        return (self.kernel, self.backend, self.implementation) == (kernel, backend,
                                                                     implementation)


def _lower_rank_operand(case: Case) -> bool:
    """An array input of lower rank than the result, with more than one element along an
    axis it broadcasts over (one element reads the same under any stride)."""
    arrays = case.arrays
    ndim = max(array.ndim for array in arrays.values())
    return any(array.ndim < ndim and array.size > 1 for array in arrays.values())


def _empty_loop(case: Case) -> bool:
    """The gufunc's loop dimension (the first axis of every input) is empty."""
    return any(array.ndim and array.shape[0] == 0 for array in case.arrays.values())


def _saxpy_broadcast_case() -> Case:
    x = np.zeros((2, 3), dtype=np.float32)
    y = np.arange(3, dtype=np.float32)
    return Case({"alpha": np.float32(1.0), "x": x, "y": y},
                "x.shape=(2, 3), y.shape=(3,), dtype=float32, alpha=1.0; known-defect case",
                (2, 3))


def _dot_empty_case() -> Case:
    x = np.zeros((0, 3), dtype=np.float32)
    return Case({"x": x, "y": x.copy()},
                "x.shape=y.shape=(0, 3) (loop b, core n), dtype=float32; known-defect case",
                (0,))


def _laplacian_empty_case() -> Case:
    u = np.zeros((0, 3, 3), dtype=np.float32)
    return Case({"u": u}, "u.shape=(0, 3, 3) (loop 0, core (3, 3)), dtype=float32; "
                          "known-defect case", (0, 3, 3))


_VECTORIZE_BROADCAST = (
    "numba-cuda 0.30.4 @vectorize(target='cuda') broadcasts an operand of lower rank with "
    "all-zero strides (it compares axes left-aligned), so every element reads its first "
    "element")
_VECTORIZE_UPSTREAM = (
    "numba_cuda/numba/cuda/vectorizers.py CUDAUFuncMechanism.broadcast_device and the host "
    "path deviceufunc.py UFuncMechanism._broadcast; no upstream report found (nearest: "
    "numba/numba#6421 and #5640, gufunc broadcasting on cuda); numba-cuda is in maintenance "
    "mode (NVIDIA/numba-cuda#902)")
_VECTORIZE_REPRODUCER = (
    "add = vectorize(['float32(float32, float32)'], target='cuda')(lambda a, b: a + b); "
    "add(cuda.to_device(np.zeros((2, 3), 'f4')), cuda.to_device(np.arange(3, dtype='f4')))"
    ".copy_to_host() gives zeros, NumPy gives [[0, 1, 2], [0, 1, 2]]")
_GUVECTORIZE_EMPTY = (
    "numba-cuda 0.30.4 @guvectorize(target='cuda') refuses an empty loop dimension with "
    "`assert schedule.loopn > 0, \"zero looping dimension\"`, where NumPy and numba's CPU "
    "gufuncs return an empty result")
_GUVECTORIZE_UPSTREAM = (
    "numba_cuda/numba/cuda/deviceufunc.py GeneralizedUFunc._broadcast; no upstream report "
    "found (nearest: numba/numba#6050, zero-length arrays in numba.cuda); numba-cuda is in "
    "maintenance mode (NVIDIA/numba-cuda#902)")
_GUVECTORIZE_REPRODUCER = (
    "g = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()', "
    "target='cuda')(dot); g(cuda.to_device(np.zeros((0, 3), 'f4')), "
    "cuda.to_device(np.zeros((0, 3), 'f4'))) raises AssertionError: zero looping dimension")

KNOWN_DEFECTS: list[KnownDefect] = [
    KnownDefect("numba-cuda-vectorize-broadcasts-with-zero-strides", "ufunc_saxpy",
                "numba-cuda", "vectorize-cuda", _lower_rank_operand, r"but should be",
                _VECTORIZE_BROADCAST, _VECTORIZE_UPSTREAM, _VECTORIZE_REPRODUCER,
                _saxpy_broadcast_case),
    KnownDefect("numba-cuda-guvectorize-refuses-empty-loop", "gufunc_dot", "numba-cuda",
                "guvectorize-cuda", _empty_loop, r"AssertionError: zero looping dimension",
                _GUVECTORIZE_EMPTY, _GUVECTORIZE_UPSTREAM, _GUVECTORIZE_REPRODUCER,
                _dot_empty_case),
    KnownDefect("numba-cuda-guvectorize-refuses-empty-loop", "gufunc_laplacian_2d",
                "numba-cuda", "guvectorize-cuda", _empty_loop,
                r"AssertionError: zero looping dimension", _GUVECTORIZE_EMPTY,
                _GUVECTORIZE_UPSTREAM, _GUVECTORIZE_REPRODUCER.replace(
                    "'(n),(n)->()'", "'(m,n)->(m,n)'"), _laplacian_empty_case),
]


class Tracker:
    """The known defects of one cell, and what the run saw of them."""

    def __init__(self, kernel: str, backend: str, implementation: str,
                 expected: tuple[tuple[str, str], ...] = ()) -> None:
        self.defects = [d for d in KNOWN_DEFECTS if d.applies(kernel, backend, implementation)]
        self.matching: dict[str, int] = {}
        self.seen: dict[str, str] = {}
        #: The implementation's own expected failures (``implements(..., xfail=...)``):
        #: clause (a value class of the boundary sweep) -> reason; held like a defect,
        #: strictly, over the sweep's cases of that class.
        self.expected = dict(expected)
        self.clause_cases: dict[str, int] = {}
        self.clause_seen: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.defects or self.expected)

    def explains(self, case: Case, problems: list[str], clause: str | None = None) -> bool:
        """True when ``case`` triggers a known defect and every problem is its symptom, or
        ``case`` is one of ``clause``'s (the sweep's value class) that the implementation
        is expected to fail, and failed.

        Counts the matching cases either way, so a defect that stops showing (a clause
        expected to fail that passes) is noticed.
        """
        if clause is not None and clause in self.expected:
            self.clause_cases[clause] = self.clause_cases.get(clause, 0) + 1
            if problems:
                first = problems[0].splitlines()[0]
                self.clause_seen.setdefault(clause, f"{case.describe}: {first}")
                return True
            return False
        for defect in self.defects:
            if not defect.when(case):
                continue
            self.matching[defect.name] = self.matching.get(defect.name, 0) + 1
            if problems and all(re.search(defect.error, line) for line in problems
                                if line.strip()):
                self.seen.setdefault(defect.name, f"{case.describe}: {problems[0]}")
                return True
        return False

    def run_minimal(self, run: Callable[[Case], list[str]]) -> None:
        """Run each defect's minimal case; a failure that is not the defect fails the item."""
        for defect in self.defects:
            case = defect.minimal()
            problems = run(case)
            if problems and not self.explains(case, problems):
                raise AssertionError("\n".join(problems))
            if not problems:
                self.explains(case, problems)  # counted: it ran and did not show

    def finish(self, versions: str) -> None:
        """End the item: xfail with the reason when a defect was seen, fail when one that
        matched cases no longer shows, return when the cell met none (a pass)."""
        __tracebackhide__ = True
        gone = [d for d in self.defects if self.matching.get(d.name) and d.name not in self.seen]
        if gone:
            raise AssertionError("\n".join(
                f"known defect {d.name} no longer reproduces: {self.matching[d.name]} "
                f"matching case(s) passed with {versions}; remove it from "
                "pytest_gpucheck/conformance/known_defects.py" for d in gone))
        passed = [c for c in self.expected if self.clause_cases.get(c) and c not in
                  self.clause_seen]
        if passed:
            raise AssertionError("\n".join(
                f"clause {c!r} is expected to fail ({self.expected[c]}), but its "
                f"{self.clause_cases[c]} case(s) passed: the implementation meets it; remove "
                f"{c!r} from its implements(..., xfail=...) (an expected failure is strict)"
                for c in passed))
        seen = [d for d in self.defects if d.name in self.seen]
        reasons = [f"known framework defect {d.name}: {d.what} ({d.upstream}). Reproducer: "
                   f"{d.reproducer}. Seen here: {self.seen[d.name]}" for d in seen]
        reasons += [f"clause {c!r} expected to fail: {self.expected[c]} (seen: "
                    f"{self.clause_seen[c]})" for c in self.expected if c in self.clause_seen]
        if reasons:
            pytest.xfail("; ".join(reasons))


def tracker_for(spec: Any, backend: Any, impl: Any) -> Tracker:
    """The known defects of the cell ``(spec.name, backend.name, impl.name)``."""
    return Tracker(spec.name, backend.name, impl.name)
