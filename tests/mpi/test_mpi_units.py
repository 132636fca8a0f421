"""The MPI feature's pure parts: marker parsing, launcher detection, decomposition, reports."""

from __future__ import annotations

import pytest

from pytest_gpucheck.environment import RANK_PID_VARIABLE, launched_rank
from pytest_gpucheck.mpi.binding import RankBinding, describe_bindings
from pytest_gpucheck.mpi.decomposition import block_range, coverage_problem
from pytest_gpucheck.mpi.launcher import Launcher
from pytest_gpucheck.mpi.marker import MpiSpec, parse_mpi_mark
from pytest_gpucheck.mpi.outcome import RankOutcome, apply_collective
from pytest_gpucheck.mpi.watchdog import (
    RUNNING,
    WAITING,
    Snapshot,
    extract_report,
    format_report,
    reported_test,
)


@pytest.mark.parametrize(
    ("mark", "spec"),
    [
        (pytest.mark.mpi(ranks=2), MpiSpec((2,), None)),
        (pytest.mark.mpi(4), MpiSpec((4,), None)),
        (pytest.mark.mpi(ranks=[4, 2, 2], timeout=60), MpiSpec((2, 4), 60.0)),
    ],
)
def test_marker_forms(mark: pytest.MarkDecorator, spec: MpiSpec) -> None:
    assert parse_mpi_mark(mark.mark, "t") == spec


@pytest.mark.parametrize(
    ("mark", "problem"),
    [
        (pytest.mark.mpi(), "needs ranks"),
        (pytest.mark.mpi(ranks=0), "integers >= 1"),
        (pytest.mark.mpi(ranks=[2, "4"]), "integers >= 1"),
        (pytest.mark.mpi(ranks=[]), "empty list"),
        (pytest.mark.mpi(ranks=2, timeout=0), "timeout=0"),
        (pytest.mark.mpi(ranks=2, procs=3), "unknown argument"),
        (pytest.mark.mpi(2, ranks=2), "once"),
    ],
)
def test_bad_markers_are_usage_errors(mark: pytest.MarkDecorator, problem: str) -> None:
    with pytest.raises(pytest.UsageError, match=problem) as caught:
        parse_mpi_mark(mark.mark, "t.py::test_x")
    assert "@pytest.mark.mpi(ranks=2)" in str(caught.value)  # names the fix
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"PMI_RANK": "1", "PMI_SIZE": "2"}, (1, 2)),
        ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, (3, 4)),
        ({"SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_NTASKS": "8"}, (2, 8)),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}, None),  # a batch script, no srun step
        ({}, None),
    ],
)
def test_launcher_detection(env: dict[str, str], expected: tuple[int, int] | None) -> None:
    found = launched_rank(env, pid=10)
    assert (None if found is None else (found.rank, found.size)) == expected


def test_a_child_of_a_rank_is_not_a_rank() -> None:
    env = {"PMI_RANK": "0", "PMI_SIZE": "2", RANK_PID_VARIABLE: "10"}
    assert launched_rank(env, pid=10) is not None
    assert launched_rank(env, pid=11) is None


def test_launcher_command_template() -> None:
    assert Launcher(("mpiexec",), 2).command(2) == ["mpiexec", "-n", "2"]
    srun = Launcher(("srun", "--ntasks={n}", "--gpus-per-task=1"), 8)
    assert srun.command(4) == ["srun", "--ntasks=4", "--gpus-per-task=1"]


@pytest.mark.parametrize(("n", "parts"), [(0, 2), (1, 3), (11, 3), (12, 4), (7, 7), (5, 1)])
def test_block_decomposition_tiles_the_range(n: int, parts: int) -> None:
    ranges = [block_range(n, parts, i) for i in range(parts)]
    assert coverage_problem(n, ranges) is None
    sizes = [stop - start for start, stop in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_coverage_problem_names_a_lost_remainder_and_an_overlap() -> None:
    lost = [(i * (11 // 3), (i + 1) * (11 // 3)) for i in range(3)]  # 9 of 11
    assert "2 element(s) lost" in (coverage_problem(11, lost) or "")
    assert "overlaps or leaves a gap" in (coverage_problem(4, [(0, 3), (2, 4)]) or "")


def _report(outcome: str, longrepr: object = None) -> pytest.TestReport:
    return pytest.TestReport("t.py::test_x", ("t.py", 3, "test_x"), {}, outcome, longrepr,
                             "call")


def test_a_failure_on_any_rank_fails_every_rank() -> None:
    outcomes = [RankOutcome(0, "passed", ""), RankOutcome(1, "failed", "ZeroDivisionError")]
    report = apply_collective(_report("passed"), outcomes, 2)
    assert report.failed
    assert "failed on rank(s) 1 of 2" in str(report.longrepr)
    assert "rank 1" in str(report.longrepr)
    assert "ZeroDivisionError" in str(report.longrepr)


def test_a_skip_on_one_rank_skips_every_rank_and_passes_stay_passes() -> None:
    skipped = apply_collective(
        _report("passed"), [RankOutcome(0, "passed", ""), RankOutcome(1, "skipped", "no")], 2)
    assert skipped.skipped
    assert "skipped on rank 1" in str(skipped.longrepr)
    passed = apply_collective(_report("passed"), [RankOutcome(0, "passed", "")] * 2, 2)
    assert passed.passed


def test_oversubscription_is_reported() -> None:
    bindings = [RankBinding(r, "node1", r, 2, 0, 1, "auto") for r in range(2)]
    lines = describe_bindings(bindings)
    assert any("2 ranks share GPU visible device 0 on node1" in line for line in lines)
    fits = [RankBinding(r, "node1", r, 2, r, 2, "auto") for r in range(2)]
    assert not any("WARNING" in line for line in describe_bindings(fits))


def test_timeout_report_names_hung_ranks_and_is_found_in_output() -> None:
    snapshots = [Snapshot(0, "h", 1, WAITING, "  File x, in allgather\n"),
                 Snapshot(1, "h", 2, RUNNING, "  File t.py, line 9, in test_x\n")]
    text = format_report("t.py::test_x", 3.0, 2.0, 3, snapshots)
    assert "hung (still running the test): rank(s) 1" in text
    assert "waiting for the other ranks: rank(s) 0" in text
    assert "no answer" in text
    assert "rank(s) 2" in text
    found = extract_report(f"noise\n{text}\nmore")
    assert found is not None
    assert reported_test(found) == "t.py::test_x"
    assert extract_report("no report here") is None


def test_timeout_report_tells_the_hung_rank_from_its_peer_blocked_in_mpi() -> None:
    sleeping = Snapshot(1, "h", 2, RUNNING, "  File t.py, line 9, in test_x\n    sleep(9)\n")
    in_barrier = Snapshot(0, "h", 1, RUNNING, "  File t.py, line 10, in test_x\n",
                          mpi_call="Barrier")
    text = format_report("t.py::test_x", 3.0, 2.0, 2, [in_barrier, sleeping])
    assert "hung (still running the test): rank(s) 1\n" in text
    assert ("blocked in an MPI call of the test, most likely waiting for them: "
            "rank(s) 0 (Barrier)") in text
    assert "rank 0 (host h, pid 1): running the test (in MPI: Barrier)" in text
    # Every rank in MPI (a deadlock): all of them are the hung ones.
    deadlock = format_report("t.py::test_x", 3.0, 2.0, 2, [
        in_barrier, Snapshot(1, "h", 2, RUNNING, "", mpi_call="Recv")])
    assert "hung (still running the test): rank(s) 0, 1\n" in deadlock
    assert "blocked in an MPI call of the test" not in deadlock
