"""``passes_the_gate``: the scenarios that assert identical code passes the regression
gate run again only when the gate's REGRESSION verdict was their sole failure, and a
gate that flags every attempt (a bias of the plugin, what they guard) still fails."""

from __future__ import annotations

import subprocess

import pytest
from user_runs import GATE_ATTEMPTS, GATE_REGRESSION, flagged_by_the_gate_alone, passes_the_gate

FLAGGED = (f"FAILED test_bench.py::test_saxpy[numpy] - {GATE_REGRESSION} "
           "test_bench.py::test_saxpy[numpy] [numpy on AMD EPYC], change +32.9%\n"
           "1 failed in 38.40s\n")
PASSED = "PASSED test_bench.py::test_saxpy[numpy]\n1 passed in 30.1s\n"
CRASHED = (f"FAILED test_bench.py::test_saxpy[numpy] - {GATE_REGRESSION} ...\n"
           "ERROR test_bench.py::test_other - worker crashed\n")
ASSERTED = (f"FAILED test_bench.py::test_saxpy[numpy] - {GATE_REGRESSION} ...\n"
            "FAILED test_bench.py::test_x[numpy] - AssertionError: assert 3.5 == 3.0\n")


def completed(stdout: str, code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["pytest"], code, stdout=stdout, stderr="")


class Scenario:
    """Returns the given runs in turn and counts the calls."""

    def __init__(self, *runs: subprocess.CompletedProcess[str]) -> None:
        self.runs = list(runs)
        self.calls = 0

    def __call__(self) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        return self.runs.pop(0)


@pytest.mark.parametrize(("stdout", "code", "alone"), [
    (FLAGGED, 1, True),
    (PASSED, 0, False),
    (CRASHED, 1, False),                    # an error beside the verdict
    (ASSERTED, 1, False),                   # another test's assertion beside it
    ("1 failed\n", 1, False),               # no summary line to tell what failed
    (FLAGGED, 2, False),                    # interrupted, not a verdict
])
def test_only_a_run_failed_by_the_gate_alone_is_flagged(stdout: str, code: int,
                                                        alone: bool) -> None:
    assert bool(flagged_by_the_gate_alone(completed(stdout, code))) is alone


def test_noise_once_is_run_again_with_a_warning() -> None:
    scenario = Scenario(completed(FLAGGED, 1), completed(PASSED, 0))
    with pytest.warns(UserWarning, match=r"flagged identical code \(attempt 1 of 3.*\+32\.9%"):
        done = passes_the_gate(scenario)
    assert (done.returncode, scenario.calls) == (0, 2)


def test_a_gate_that_flags_every_attempt_fails_the_scenario() -> None:
    scenario = Scenario(*[completed(FLAGGED, 1)] * GATE_ATTEMPTS)
    with pytest.warns(UserWarning, match="flagged identical code") as retried:
        done = passes_the_gate(scenario)
    assert (done.returncode, scenario.calls) == (1, GATE_ATTEMPTS)
    assert len(retried) == GATE_ATTEMPTS - 1  # the last flagged run is the verdict
    assert GATE_REGRESSION in done.stdout


def test_any_other_failure_is_returned_at_once() -> None:
    scenario = Scenario(completed(CRASHED, 1), completed(PASSED, 0))
    done = passes_the_gate(scenario)
    assert (done.returncode, scenario.calls) == (1, 1)
