"""The summary's lines for a child that died, worded once for every router (the
long-lived worker, the simulator child, the spawned MPI job): the exact words the
routers wrote each for itself before, which users and docs/reliability.md read."""

from __future__ import annotations

import types

import pytest

from pytest_gpucheck.processes.deaths import death_line, failed_outside_tests_line

ITEM = types.SimpleNamespace(nodeid="test_a.py::test_b[numpy]")
WHAT = "The numba-cudasim child process"


@pytest.mark.parametrize(("args", "kwargs", "line"), [
    ((WHAT, -11, ITEM), {},
     f"{WHAT} was killed by signal 11 (SIGSEGV) while running test_a.py::test_b[numpy]"),
    ((WHAT, 7), {}, f"{WHAT} exited with code 7 after its last test"),
    ((WHAT, 3), {"unstarted": True}, f"{WHAT} exited with code 3 before running a test"),
    (("The MPI job (mpiexec -n 2)", 139, ITEM), {"launcher": True},
     "The MPI job (mpiexec -n 2) exited with code 139 (128 + SIGSEGV: a rank was killed by "
     "that signal) while running test_a.py::test_b[numpy]"),
])
def test_a_death_says_how_the_child_ended_and_when(args: tuple, kwargs: dict, line: str) -> None:
    assert death_line(*args, **kwargs) == line


def test_a_failure_outside_the_tests_shows_the_last_ten_lines() -> None:
    output = "\n".join(f"line {n}" for n in range(1, 13))
    assert failed_outside_tests_line(WHAT, 1, output) == (
        f"{WHAT} exited with code 1 although its tests passed; its last lines:\n"
        + "\n".join(f"line {n}" for n in range(3, 13)))
