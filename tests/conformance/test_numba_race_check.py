"""The numba-cpu race check reads ``prange`` loops (``backends/numba/race_check.py``).

Each tiny ``parallel=True`` function below is one shape of write inside a ``prange``
body; the check must call the racing ones races (with the house message), leave the
correct ones alone, and call the ones that race only for some data "may race".
The analysis compiles each function up to Numba's ``ParforPass`` only (no machine
code), so these cost about a second together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba import njit, prange, types  # noqa: E402

from pytest_gpucheck.backends.numba import race_check  # noqa: E402
from pytest_gpucheck.backends.numba.race_check import (  # noqa: E402
    LoopScan,
    parallel_loop_findings,
)

F1 = types.Array(types.float64, 1, "A")
F2 = types.Array(types.float64, 2, "A")
I1 = types.Array(types.int64, 1, "A")


def constant_index(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        out[0] += x[i]


def loop_index(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        out[i] = 2 * x[i]


def scalar_reduction(x: Any, out: Any) -> None:
    acc = 0.0
    for i in prange(x.shape[0]):
        acc += x[i]
    out[0] = acc


def index_from_outside(x: Any, out: Any) -> None:
    last = out.shape[0] - 1
    for i in prange(x.shape[0]):
        out[last] = x[i]


def row_of_a_2d_out(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        out[i, 0] = x[i]


def inner_loop_on_row_zero(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        for j in range(out.shape[1]):
            out[0, j] += x[i]


def through_an_index_array(idx: Any, out: Any) -> None:
    for i in prange(idx.shape[0]):
        out[idx[i]] += 1


def only_the_first_iteration(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        if i == 0:
            out[0] = x[i]


def scratch_of_its_own(x: Any, out: Any) -> None:
    for i in prange(x.shape[0]):
        scratch = np.zeros(2)
        scratch[0] = x[i]  # an array allocated in the body: each iteration's own
        out[i] = scratch[0]


def findings(function: Any, *args: Any) -> list[race_check.LoopFinding]:
    return parallel_loop_findings(njit(parallel=True)(function), args)


def test_a_constant_index_is_a_race() -> None:
    [found] = findings(constant_index, F1, F1)
    assert found.kind == "race"
    assert found.message().startswith(
        "a data race: the prange loop writes out[0] at an index that does not depend on its "
        "loop index, so threads lose updates (found in the compiled loop, not by chance: "
        "constant_index, test_numba_race_check.py:")


def test_an_index_from_outside_the_loop_is_a_race() -> None:
    [found] = findings(index_from_outside, F1, F1)
    assert found.kind == "race"
    # A plain store, not an update: the message says what goes wrong then.
    assert "writes out[last] at an index that does not depend on its loop index, so threads " \
           "write the same element at once" in found.message()


def test_an_inner_serial_loop_does_not_make_the_index_follow_the_prange() -> None:
    [found] = findings(inner_loop_on_row_zero, F1, F2)
    assert (found.kind, found.write) == ("race", "out[0, j]")


@pytest.mark.parametrize(("function", "args"), [
    (loop_index, (F1, F1)),
    (scalar_reduction, (F1, F1)),
    (row_of_a_2d_out, (F1, F2)),
    (scratch_of_its_own, (F1, F1)),
], ids=["loop_index", "scalar_reduction", "row_of_a_2d_out", "scratch_of_its_own"])
def test_correct_loops_have_no_finding(function: Any, args: tuple[Any, ...]) -> None:
    assert findings(function, *args) == []


def test_an_index_read_from_an_array_may_race() -> None:
    # A race exactly when idx repeats: the data decides, so a note, not a failure.
    [found] = findings(through_an_index_array, I1, I1)
    assert (found.kind, found.write) == ("may race", "out[idx[i]]")
    assert "at an index read from an array" in found.message()
    assert "not failed on this alone: the repeat check decides" in found.message()


def test_a_write_on_some_iterations_only_may_race() -> None:
    [found] = findings(only_the_first_iteration, F1, F1)
    assert found.kind == "may race"
    assert "only on iterations that take a branch" in found.message()


def test_the_bundled_numba_cpu_kernels_have_no_finding() -> None:
    from pytest_gpucheck.conformance.implementations import _numba_cpu_kernels as kernels

    f, i = types.float64, types.int64
    arguments = {
        "sum": (F1, F1, f), "dot": (F1, F1, F1, f), "weighted_sum": (F1, F1, F1, f),
        "max": (F1, F1), "sum_of_squares": (F1, F1, f), "histogram": (I1, I1, i),
        "heat_steps_1d": (F1, f, i, F1), "laplacian_2d": (F2, F2),
        "matmul": (F2, F2, F2, f), "matmul_tiled": (F2, F2, F2, f),
    }
    parallel = {name for name, (_, is_parallel) in kernels.BODIES.items() if is_parallel}
    assert parallel == set(arguments)  # a new parallel kernel gets its line here
    for name in sorted(parallel):
        assert findings(kernels.BODIES[name][0], *arguments[name]) == [], name
    assert parallel_loop_findings(kernels._heat_step_into, (F1, f, F1)) == []


def test_the_scan_reads_what_was_compiled_while_it_was_active() -> None:
    racy = njit(parallel=True, cache=False)(constant_index)
    serial = njit(cache=False)(constant_index)  # prange is range here: no race
    x, out = np.ones(64), np.zeros(1)
    with LoopScan() as scan:
        racy(x, out)
        serial(x, out)
    found, note = scan.findings()
    assert [f.kind for f in found] == ["race"]
    assert note == "prange loops inspected in constant_index"
    with LoopScan() as again:
        racy(x, out)  # compiled before: nothing compiled in this scan
    assert again.findings()[0] == []
    assert "the repeat check alone looked for races" in again.findings()[1]


def test_the_scan_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another Numba whose internals differ: a note, and the repeat check alone.
    def other_numba(dispatcher: Any, args: Any) -> Any:
        raise AttributeError("'Parfor' object has no attribute 'loop_nests'")

    monkeypatch.setattr(race_check, "parallel_loop_findings", other_numba)
    racy = njit(parallel=True, cache=False)(constant_index)
    with LoopScan() as scan:
        racy(np.ones(8), np.zeros(1))
    found, note = scan.findings()
    assert found == []
    assert ("could not inspect constant_index's prange loops (AttributeError: 'Parfor' "
            "object has no attribute 'loop_nests')") in note
    assert note.endswith("the repeat check alone looked there")

    monkeypatch.setattr(numba.core.event, "install_listener", other_numba)
    with LoopScan() as blind:
        pass
    assert "could not watch Numba's compiles (AttributeError" in blind.findings()[1]
