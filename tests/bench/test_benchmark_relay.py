"""pytest-benchmark's results come back from the processes that run the tests.

On a GPU machine every backend item runs in an isolation worker; simulator items
run in the numba-cudasim child.  pytest-benchmark measures them there, and once its
``--benchmark-json`` wrote no benchmark although 30 had passed.  Each scenario is what
a user does, ``python -m pytest`` on a small project in a subprocess, compared with
the same run in-process (``--gpu-isolate=none``): the same benchmarks in the JSON file
and the table, a saved run, a regression that ``--benchmark-compare-fail`` catches.
Every one of them fails when the relay (``pytest_gpucheck.bench.relay``) is taken out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from user_runs import SLOW_KERNEL, junit_outcomes, run_pytest

from pytest_gpucheck.bench.relay import as_wire, rebuild

#: Few, short rounds: the checks are about which benchmarks arrive, not their numbers
#: (ten, the fewest a gate comparison takes, and no more where they are noisy).
INI = textwrap.dedent("""\
    [pytest]
    gpu_backends = numpy
    gpu_bench_rounds = 10
    gpu_bench_max_rounds = 10
    """)
QUICK = ("--benchmark-min-rounds=5", "--benchmark-max-time=0.02")

#: A ``gpu_benchmark`` test and a plain pytest-benchmark one, both per backend (so both
#: run where the backend's items run); the kernel does ``KSLOW`` times the work.
BENCH = SLOW_KERNEL + textwrap.dedent("""\


    def test_saxpy(gpu_benchmark, gpu_backend):
        x = np.ones(1 << 12, np.float32)
        gpu_benchmark(saxpy, x, x)


    def test_plain(benchmark, gpu_backend):
        x = np.ones(1 << 12, np.float32)
        benchmark.extra_info["dtype"] = x.dtype
        benchmark(saxpy, x, x)
    """)

#: How each scenario runs the items: (arguments, backend of the items).
MODES = {
    "in-process": (("--gpu-isolate=none",), "numpy"),
    "isolate-backend": (("--gpu-isolate=backend",), "numpy"),
    "isolate-test": (("--gpu-isolate=test",), "numpy"),
    "simulator-child": (("--gpu-backends=numba-cudasim",), "numba-cudasim"),
}


def project(folder: Path, source: str = BENCH) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytest.ini").write_text(INI)
    (folder / "test_bench.py").write_text(source)
    return folder


def run(folder: Path, *args: str, slow: int = 1) -> subprocess.CompletedProcess[str]:
    return run_pytest(folder, "-rA", f"--junitxml={folder / 'junit.xml'}", *QUICK, *args,
                      timeout=1200, extra_env={"KSLOW": str(slow)})


def json_benchmarks(path: Path) -> dict[str, dict[str, Any]]:
    """fullname -> benchmark, from a ``--benchmark-json`` file."""
    return {bench["fullname"]: bench for bench in json.loads(path.read_text())["benchmarks"]}


def table_rows(output: str) -> list[str]:
    """The names in pytest-benchmark's table, in its order."""
    rows, inside = [], False
    for line in output.splitlines():
        if re.match(r"-+ benchmark\b", line):
            inside = True
        elif inside and line.startswith("Legend:"):
            inside = False
        elif inside and line.startswith("test_"):
            rows.append(line.split()[0])
    return rows


@pytest.fixture(scope="module")
def in_process_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project run in-process with a JSON file and a saved run (``0001_base``): the
    reference of the JSON-and-table comparison and the baseline of the compare tests."""
    folder = project(tmp_path_factory.mktemp("in-process"))
    done = run(folder, "--gpu-isolate=none", "--benchmark-json=out.json",
               "--benchmark-save=base")
    assert done.returncode == 0, done.stdout + done.stderr
    (folder / "stdout.txt").write_text(done.stdout)
    return folder


@pytest.fixture(scope="module")
def in_process(in_process_run: Path) -> tuple[str, dict[str, Any]]:
    """The reference: the project run in-process (its table output and its JSON)."""
    return ((in_process_run / "stdout.txt").read_text(),
            json_benchmarks(in_process_run / "out.json"))


@pytest.fixture(scope="module")
def backend_worker_run(tmp_path_factory: pytest.TempPathFactory,
                       ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The project run in a backend worker with a JSON file, autosave and a shaped table:
    read by the JSON-and-table comparison and by the autosave test."""
    folder = project(tmp_path_factory.mktemp("isolate-backend"))
    return folder, run(folder, "--gpu-isolate=backend", "--benchmark-json=out.json",
                       "--benchmark-autosave", "--benchmark-sort=name",
                       "--benchmark-columns=min,rounds")


@pytest.mark.slow
@pytest.mark.parametrize("mode", [m for m in MODES if m != "in-process"])
def test_json_and_table_match_the_in_process_run(
        tmp_path: Path, mode: str, in_process: tuple[str, dict[str, Any]],
        request: pytest.FixtureRequest) -> None:
    args, backend = MODES[mode]
    if mode == "isolate-backend":
        folder, done = request.getfixturevalue("backend_worker_run")
    else:
        folder, done = tmp_path, run(project(tmp_path), *args, "--benchmark-json=out.json")
    assert done.returncode == 0, done.stdout + done.stderr
    reference_output, reference = in_process
    got = json_benchmarks(folder / "out.json")
    expected = {name.replace("[numpy]", f"[{backend}]") for name in reference}
    assert set(got) == expected == {f"test_bench.py::test_saxpy[{backend}]",
                                    f"test_bench.py::test_plain[{backend}]"}, got
    for name, bench in got.items():
        twin = reference[name.replace(f"[{backend}]", "[numpy]")]
        assert sorted(bench) == sorted(twin)
        assert sorted(bench["stats"]) == sorted(twin["stats"])
        assert bench["stats"]["rounds"] == len(bench["stats"]["data"]) >= 5
        assert bench["options"]["timer"] == twin["options"]["timer"]
    # A value JSON cannot hold is written as pytest-benchmark writes it in-process.
    plain = got[f"test_bench.py::test_plain[{backend}]"]
    assert plain["extra_info"] == {"dtype": "UNSERIALIZABLE[dtype('float32')]"}
    assert got[f"test_bench.py::test_saxpy[{backend}]"]["extra_info"]["gpucheck"][
        "environment"]["backend"] == backend
    # The same rows (their order follows the measured minimum: --benchmark-sort=min).
    rows = sorted(table_rows(done.stdout))
    assert rows == sorted(row.replace("[numpy]", f"[{backend}]")
                          for row in table_rows(reference_output)), done.stdout
    assert len(rows) == 2


@pytest.mark.slow
def test_autosave_writes_the_run_to_the_storage(
        backend_worker_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    folder, done = backend_worker_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Not saving anything" not in done.stdout + done.stderr
    saved = list((folder / ".benchmarks").glob("*/0001_*.json"))
    assert len(saved) == 1, done.stdout
    names = sorted(b["fullname"] for b in json.loads(saved[0].read_text())["benchmarks"])
    assert names == ["test_bench.py::test_plain[numpy]", "test_bench.py::test_saxpy[numpy]"]
    # --benchmark-sort and --benchmark-columns shape the table made here.
    assert table_rows(done.stdout) == ["test_plain[numpy]", "test_saxpy[numpy]"]
    header = next(line for line in done.stdout.splitlines() if line.startswith("Name (time"))
    assert header.split()[4:] == ["Min", "Rounds"], header


@pytest.fixture(scope="module")
def saved_run(in_process_run: Path) -> Path:
    """A project with one saved run of the fast kernel, measured in-process (the
    reference run's: the compare runs below leave it as it is, saving nothing)."""
    assert len(list((in_process_run / ".benchmarks").glob("*/0001_base.json"))) == 1
    return in_process_run


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["in-process", "isolate-backend"])
def test_compare_fail_catches_a_planted_slowdown(saved_run: Path, mode: str) -> None:
    args, _ = MODES[mode]
    done = run(saved_run, *args, "--benchmark-compare=0001",
               "--benchmark-compare-fail=mean:5%", slow=8)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Performance has regressed" in done.stdout + done.stderr
    assert "test_saxpy[numpy]" in done.stdout
    assert "(0001_base)" in done.stdout  # the saved run's rows, beside this run's


@pytest.mark.slow
def test_compare_fail_passes_the_unchanged_kernel_in_a_worker(saved_run: Path) -> None:
    # The minimum is what noise moves least; an 8x slowdown moves it far past 300%.
    done = run(saved_run, "--gpu-isolate=backend", "--benchmark-compare=0001",
               "--benchmark-compare-fail=min:300%", slow=1)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Performance has regressed" not in done.stdout + done.stderr
    assert "(0001_base)" in done.stdout


KILLED = textwrap.dedent("""\
    import os
    import signal

    import numpy as np


    def test_a_finishes(benchmark, gpu_backend):
        benchmark(np.add, np.ones(8), np.ones(8))


    def test_b_dies(benchmark, gpu_backend):
        benchmark(os.kill, os.getpid(), signal.SIGKILL)


    def test_c_after(benchmark, gpu_backend):
        benchmark(np.add, np.ones(8), np.ones(8))
    """)


@pytest.mark.slow
def test_a_worker_killed_in_a_benchmark_keeps_the_finished_ones(tmp_path: Path) -> None:
    folder = project(tmp_path, KILLED)
    done = run(folder, "--gpu-isolate=backend", "--benchmark-json=out.json")
    assert done.returncode == 1, done.stdout + done.stderr
    outcomes = junit_outcomes(folder / "junit.xml")
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_a_finishes[numpy]": "passed", "test_b_dies[numpy]": "failure",
        "test_c_after[numpy]": "passed"}, outcomes
    assert "SIGKILL" in outcomes["test_b_dies[numpy]"][1]
    assert sorted(json_benchmarks(folder / "out.json")) == [
        "test_bench.py::test_a_finishes[numpy]", "test_bench.py::test_c_after[numpy]"]


def test_a_benchmark_survives_the_wire() -> None:
    """Unit: a relayed benchmark gives pytest-benchmark the child's numbers, its JSON
    and its ``str`` of a parameter JSON cannot hold."""
    pytest.importorskip("pytest_benchmark")
    import numpy as np
    from pytest_benchmark.stats import Metadata
    from pytest_benchmark.utils import safe_dumps

    fixture = type("Fixture", (), dict(
        name="test_k[float32]", fullname="child::test_k[float32]", group="g",
        param="float32", params={"dtype": np.dtype("float32"), "n": 3}, has_error=False,
        extra_info={"shape": (2, 3)}, cprofile_stats=None))()
    original = Metadata(fixture, iterations=2, options={"timer": os.times, "min_rounds": 5})
    for seconds in (4.0, 2.0, 3.0, 9.0):
        original.update(seconds)
    copy = rebuild(json.loads(json.dumps(as_wire(original))), "test_k.py::test_k[float32]")
    want = original.as_dict()
    want["fullname"] = "test_k.py::test_k[float32]"
    assert safe_dumps(copy.as_dict()) == safe_dumps(want)
    assert str(copy.params["dtype"]) == "float32"
    assert copy.params["n"] == 3
    assert str(copy.extra_info["shape"]) == "(2, 3)"
    assert copy.has_error is False
    assert bool(copy)


@pytest.mark.slow
def test_histogram_draws_the_benchmarks_of_a_worker(tmp_path: Path) -> None:
    pytest.importorskip("pygal", reason="--benchmark-histogram needs pytest-benchmark[histogram]")
    done = run(project(tmp_path), "--gpu-isolate=backend", "--benchmark-histogram=hist")
    assert done.returncode == 0, done.stdout + done.stderr
    drawn = list(tmp_path.glob("hist*.svg"))
    assert len(drawn) == 1, done.stdout
    svg = drawn[0].read_text()
    assert "test_saxpy[numpy]" in svg
    assert "test_plain[numpy]" in svg


MPI = textwrap.dedent("""\
    import numpy as np
    import pytest


    @pytest.mark.mpi(ranks=2)
    def test_ranked(benchmark, mpi_comm):
        benchmark(np.add, np.ones(8), np.ones(8))
        assert mpi_comm.allreduce(1) == 2


    def test_local(benchmark):
        benchmark(np.add, np.ones(8), np.ones(8))
    """)


@pytest.mark.slow
def test_an_mpi_test_spawned_under_the_launcher_has_rank_0s_benchmark(tmp_path: Path) -> None:
    """Under ``mpiexec -n 2`` each rank measures; rank 0's reports speak for the job, so
    its benchmark is the test's one (as rank 0's session writes it under a launcher)."""
    from pytest_gpucheck.mpi.launcher import find_executable

    launcher = find_executable("mpiexec")
    if launcher is None:
        pytest.skip("needs mpiexec: pip install 'pytest-gpucheck[mpi]'")
    folder = project(tmp_path, MPI)
    done = run_pytest(folder, *QUICK, "--benchmark-json=out.json", timeout=1200,
                      extra_env={"PATH": f"{Path(launcher).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stdout + done.stderr
    benchmarks = json.loads((folder / "out.json").read_text())["benchmarks"]
    assert sorted(b["fullname"] for b in benchmarks) == ["test_bench.py::test_local",
                                                         "test_bench.py::test_ranked"]
    assert sorted(table_rows(done.stdout)) == ["test_local", "test_ranked"]


@pytest.mark.slow
def test_a_workers_profile_is_shown_and_dumped_where_the_user_asked(tmp_path: Path) -> None:
    """``--benchmark-cprofile`` shows the worker's profile; ``--benchmark-cprofile-dump``
    writes it relative to where pytest was started, not to the worker's folder."""
    folder = project(tmp_path)
    started = folder / "sub"
    started.mkdir()
    done = run_pytest(started, *QUICK, "--gpu-isolate=backend", "--benchmark-cprofile=tottime",
                      "--benchmark-cprofile-dump=prof/dump", "../test_bench.py", timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    profile = done.stdout.split("cProfile (time in s)", 1)[-1]
    assert "test_bench.py::test_saxpy[numpy]\nncalls\ttottime" in profile, done.stdout
    assert re.search(r"test_bench\.py:\d+\(saxpy\)", profile), done.stdout
    assert sorted(p.name for p in (started / "prof").iterdir()) == [
        "dump-test_plain[numpy].prof", "dump-test_saxpy[numpy].prof"]
