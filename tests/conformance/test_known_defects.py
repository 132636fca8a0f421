"""Known framework defects are narrow, strict xfails (``conformance/known_defects.py``).

numba-cuda's ``target='cuda'`` ufuncs cannot run here (no GPU, and the
simulator cannot build them), but the defective code is pure Python and runs
on host arrays: ``UFuncMechanism._broadcast`` (the host twin of
``broadcast_device``, the same left-aligned axis comparison) and
``GeneralizedUFunc._broadcast`` (the ``zero looping dimension`` assert).  A
user's project registers implementations on the ``numpy`` backend that go
through that code, and records the real entries for them; the bundled suites
then run as a user runs them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.user_runs import junit_outcomes, run_pytest

CONFTEST = """
import dataclasses

import numpy as np
from numba.cuda.deviceufunc import GeneralizedUFunc, GUFuncEngine, UFuncMechanism

from pytest_gpucheck import implements
from pytest_gpucheck.conformance import known_defects

ENTRIES = {{d.kernel: d for d in known_defects.KNOWN_DEFECTS
           if d.backend == "numba-cuda"}}


def record(kernel, name):
    known_defects.KNOWN_DEFECTS.append(
        dataclasses.replace(ENTRIES[kernel], backend="numpy", implementation=name))


def numba_cuda_broadcast(*arrays):
    # numba-cuda's own broadcasting of ufunc operands (host path, same rule as on a device)
    return object.__new__(UFuncMechanism)._broadcast(list(arrays))


def numba_cuda_gufunc_loop(signature, *arrays):
    schedule = GUFuncEngine.from_signature(signature).schedule([a.shape for a in arrays])
    object.__new__(GeneralizedUFunc)._broadcast(schedule, list(arrays), [])


@implements("ufunc_saxpy", backend="numpy", name="zero-strides")
def saxpy_with_the_defect(alpha, x, y):
    x, y = numba_cuda_broadcast(x, y)
    return (alpha * x + y).astype(x.dtype)


@implements("ufunc_saxpy", backend="numpy", name="numpy-strides")
def saxpy_without_it(alpha, x, y):
    return (alpha * x + y).astype(x.dtype)


@implements("gufunc_dot", backend="numpy", name="empty-loop-assert")
def dot_with_the_defect(x, y):
    numba_cuda_gufunc_loop("(n),(n)->()", x, y)
    return np.einsum("bn,bn->b", x, y).astype(np.result_type(x, y))


@implements("gufunc_dot", backend="numpy", name="empty-loop-fine")
def dot_without_it(x, y):
    return np.einsum("bn,bn->b", x, y).astype(np.result_type(x, y))


for kernel, name in {recorded}:
    record(kernel, name)
"""


def _run(tmp_path: Path, recorded: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(CONFTEST.format(recorded=recorded)), encoding="utf-8")
    done = run_pytest(tmp_path, "--gpu-conformance", "--gpu-impls=user", "--gpu-backends=numpy",
                      "-k", "ufunc_saxpy or gufunc_dot", "--junitxml=out.xml", "-rxX",
                      timeout=1200)
    assert (tmp_path / "out.xml").exists(), done.stdout + done.stderr
    return junit_outcomes(tmp_path / "out.xml")


@pytest.mark.slow
def test_a_recorded_defect_is_an_xfail_and_a_fixed_one_fails(tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    outcomes = _run(tmp_path, [("ufunc_saxpy", "zero-strides"), ("ufunc_saxpy", "numpy-strides"),
                               ("gufunc_dot", "empty-loop-assert"),
                               ("gufunc_dot", "empty-loop-fine")])
    outcome, text = outcomes["test_ufunc_saxpy[numpy:zero-strides]"]
    assert outcome == "skipped", text  # JUnit writes an xfail as skipped
    assert "known framework defect numba-cuda-vectorize-broadcasts-with-zero-strides" in text
    assert "NumPy gives [[0, 1, 2], [0, 1, 2]]" in text, text
    outcome, text = outcomes["test_gufunc_dot[numpy:empty-loop-assert]"]
    assert outcome == "skipped", text
    assert "numba-cuda-guvectorize-refuses-empty-loop" in text, text
    # The twins, recorded but without the defect: strict, so they fail and say why.
    for twin in ("test_ufunc_saxpy[numpy:numpy-strides]", "test_gufunc_dot[numpy:empty-loop-fine]"):
        outcome, text = outcomes[twin]
        assert outcome == "failure", (twin, text)
        assert "no longer reproduces" in text, text


@pytest.mark.slow
def test_without_the_entry_the_defect_fails_and_the_twin_passes(tmp_path: Path) -> None:
    """The defective implementations are caught by the ordinary checks (the entry is what
    makes them an xfail), and a correct one with no entry passes."""
    pytest.importorskip("numba.cuda")
    outcomes = _run(tmp_path, [])
    outcome, text = outcomes["test_ufunc_saxpy[numpy:zero-strides]"]
    assert outcome == "failure", outcomes
    assert "but should be" in text, text
    outcome, text = outcomes["test_gufunc_dot[numpy:empty-loop-assert]"]
    assert outcome == "failure", text
    assert "zero looping dimension" in text, text
    assert outcomes["test_ufunc_saxpy[numpy:numpy-strides]"][0] == "passed"
    assert outcomes["test_gufunc_dot[numpy:empty-loop-fine]"][0] == "passed"


def test_the_triggers_are_narrow() -> None:
    """Only broadcasting over a lower-rank operand, only an empty loop dimension."""
    import numpy as np

    from pytest_gpucheck.conformance.known_defects import KNOWN_DEFECTS
    from pytest_gpucheck.conformance.specs import Case

    broadcast = next(d for d in KNOWN_DEFECTS if d.kernel == "ufunc_saxpy")
    x = np.zeros((2, 3), np.float32)

    def saxpy(y: np.ndarray) -> Case:
        return Case({"alpha": np.float32(1), "x": x, "y": y}, "", (2, 3))

    assert broadcast.when(saxpy(np.zeros(3, np.float32)))
    assert not broadcast.when(saxpy(np.zeros((2, 3), np.float32)))
    assert not broadcast.when(saxpy(np.zeros((2, 1), np.float32)))  # same rank: right
    assert not broadcast.when(saxpy(np.zeros(1, np.float32)))  # one element: same either way
    empty = next(d for d in KNOWN_DEFECTS if d.kernel == "gufunc_dot")
    assert empty.when(Case({"x": np.zeros((0, 3)), "y": np.zeros((0, 3))}, "", (0,)))
    assert not empty.when(Case({"x": np.zeros((2, 0)), "y": np.zeros((2, 0))}, "", (2,)))
