"""The regression gate gates wherever a benchmark runs: in-process, in an isolation
worker (``--gpu-isolate=backend|test``, what every GPU machine runs), in the
simulator's child process, and on pytest-xdist workers.

Each scenario is what a user does: a small project, a baseline, then the same test
with a kernel 64 times slower, run as ``python -m pytest`` in a subprocess; the
64x-slower kernel must fail with the gate's REGRESSION message, exactly once, and the
unchanged kernel must pass.  Once the gate's options never reached the workers and an
8x slowdown passed there (exit 0); with the peers of ``--gpu-bench-against`` started
in a worker, their reports leaked into the worker's and one test had five outcomes.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from bench_projects import gate_ini
from user_runs import IDENTICAL_CODE, SLOW_KERNEL, junit_outcomes, run_pytest

pytestmark = pytest.mark.slow

#: Few rounds, processes and pairs: a 64x slowdown (+4.16 in logs) needs little power,
#: and each scenario's chance of missing it is set by the spread between processes
#: (noncentral t; scipy.stats.nct): the stored mode's 3 + 3 processes (4 degrees of
#: freedom, two-sided 0.01) miss it with probability 1.3e-13 at an SD of 25% between
#: processes and below 1e-4 up to about 40%; the gate against a checkout's 5 pairs (its
#: first look at half the level) miss it with 5e-8 at a between-pair SD of 50% and below
#: 1e-4 up to about 55%.  The simulator child is the noisy one: 24.6% between pairs at
#: rest, where 3 pairs and an 8x slowdown (the former settings) missed it 35% of the
#: time, and did once in CI.  Fewer processes only make the unchanged twin harder to flag.
INI = gate_ini(gpu_bench_rounds=20, gpu_bench_max_rounds=40, gpu_bench_replicates=3,
               gpu_bench_processes=3, gpu_bench_budget=1)
#: The gate against a checkout judges pair figures, not rounds: ten per process (the
#: fewest a comparison takes) and no more where they are noisy; a 64x slowdown and an
#: identical twin at family level 1e-5 keep their verdicts (the level and the pairs, not
#: the rounds, set the false-fail chance).
AGAINST_INI = INI.replace("gpu_bench_rounds = 20", "gpu_bench_rounds = 10").replace(
    "gpu_bench_max_rounds = 40", "gpu_bench_max_rounds = 10").replace(
    "gpu_bench_replicates = 3", "gpu_bench_replicates = 5")

BENCH = SLOW_KERNEL + textwrap.dedent("""\


    def test_saxpy(gpu_benchmark, gpu_backend):
        x = np.ones(1 << 14, np.float32)
        result = gpu_benchmark(saxpy, x, x)
        assert float(result[0]) == 3.5
    """)

#: What the unchanged-kernel scenario of the stored mode guards is a bias of the worker (a
#: heap hole once made it +600%); identical code recorded in-process and compared in a
#: worker has read +52.9% in CI, +49.3% and +8.2% here, a drift between the two runs that
#: the stored gate's t test on the 3 + 3 processes' summaries does not model.  So it fails
#: only beyond +100% (the floor), and at the family level 1e-5: identical code is a
#: REGRESSION (or IMPROVEMENT) with probability at most 1e-5 by the t test's design, and
#: only where the drift alone also passes the floor (at the default 0.01 the design
#: allowed 1%).  Nothing is run again.
STORED_LOOSE = ("-o", "gpu_bench_min_effect=1.0", "-o", "gpu_bench_relative_min_effect=1.0",
                "--gpu-bench-family-level=1e-5")

#: How each scenario runs the items: (extra arguments, backend of the item).  One xdist
#: worker is an xdist worker all the same (the one test would leave a second idle).
MODES = {
    "in-process": (("--gpu-isolate=none",), "numpy"),
    "isolate-backend": (("--gpu-isolate=backend",), "numpy"),
    "isolate-test": (("--gpu-isolate=test",), "numpy"),
    "simulator-child": (("--gpu-backends=numba-cudasim",), "numba-cudasim"),
    "xdist-isolate-backend": (("--gpu-isolate=backend", "-n", "1"), "numpy"),
}


def project(folder: Path, ini: str = INI) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytest.ini").write_text(ini)
    (folder / "test_bench.py").write_text(BENCH)
    return folder


def run(folder: Path, *args: str, slow: int) -> subprocess.CompletedProcess[str]:
    return run_pytest(folder, "-rA", f"--junitxml={folder / 'junit.xml'}", *args,
                      timeout=1200, extra_env={"KSLOW": str(slow)})


def assert_regression(folder: Path, done: subprocess.CompletedProcess[str], backend: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"REGRESSION test_bench.py::test_saxpy[{backend}]" in done.stdout, done.stdout
    outcomes = junit_outcomes(folder / "junit.xml")  # also: no test reported twice
    assert list(outcomes) == [f"test_saxpy[{backend}]"], outcomes
    outcome, message = outcomes[f"test_saxpy[{backend}]"]
    assert outcome == "failure", (outcome, message)
    assert "gpucheck benchmark gate: REGRESSION" in message


def assert_passed(folder: Path, done: subprocess.CompletedProcess[str], backend: str) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "REGRESSION" not in done.stdout
    outcomes = junit_outcomes(folder / "junit.xml")
    assert outcomes == {f"test_saxpy[{backend}]": ("passed", "")}, outcomes


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with a baseline of the fast kernel on numpy and on the simulator."""
    folder = project(tmp_path_factory.mktemp("stored"))
    done = run(folder, "--gpu-bench-save", "--gpu-isolate=none",
               "--gpu-backends=numpy,numba-cudasim", slow=1)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = sorted(p.parent.name for p in (folder / ".gpucheck-baselines").glob("*/*/*.json"))
    assert saved == ["numba-cudasim", "numpy"], saved
    return folder


@pytest.mark.parametrize("mode", list(MODES))
def test_compare_fails_a_64x_slower_kernel(stored: Path, mode: str) -> None:
    args, backend = MODES[mode]
    # The baseline was recorded in-process; the scenario is the gate's options reaching
    # the workers, so it compares across modes and asks the stored gate to fail.
    done = run(stored, "--gpu-bench-compare", "--gpu-bench-cross-mode",
               "--gpu-bench-compare-fails", *args, slow=64)
    assert_regression(stored, done, backend)


def test_compare_passes_the_unchanged_kernel_in_a_worker(tmp_path: Path) -> None:
    """Recorded in-process, compared in an isolation worker.  Each attempt records its
    baseline just before it compares: a baseline stored minutes earlier, by the module's
    fixture, meets whatever load the machine has since."""
    folder = project(tmp_path)

    def recorded_then_compared() -> subprocess.CompletedProcess[str]:
        saved = run(folder, "--gpu-bench-save", "--gpu-isolate=none", slow=1)
        assert saved.returncode == 0, saved.stdout + saved.stderr
        return run(folder, "--gpu-bench-compare", "--gpu-bench-cross-mode",
                   "--gpu-bench-compare-fails", "--gpu-isolate=backend", *STORED_LOOSE,
                   slow=1)

    assert_passed(folder, recorded_then_compared(), "numpy")


def checkouts(root: Path) -> Path:
    """``root/baseline`` and ``root/candidate``: the same project; the candidate is run."""
    project(root / "baseline", AGAINST_INI)
    return project(root / "candidate", AGAINST_INI)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "in-process"])
def test_against_fails_a_64x_slower_kernel(tmp_path: Path, mode: str) -> None:
    """The peers start in the process that runs the test (the worker, the simulator
    child).  Both checkouts inherit the environment, so only the candidate's file reads
    the variable that slows its kernel down."""
    candidate = checkouts(tmp_path)
    (candidate / "test_bench.py").write_text(BENCH.replace('"KSLOW"', '"KSLOW_CANDIDATE"'))
    args, backend = MODES[mode]
    done = run_pytest(candidate, "-rA", f"--junitxml={candidate / 'junit.xml'}",
                      "--gpu-bench-against=../baseline", *args, timeout=1200,
                      extra_env={"KSLOW_CANDIDATE": "64"})
    assert_regression(candidate, done, backend)


def test_against_passes_the_identical_twin_in_a_worker(tmp_path: Path) -> None:
    # As users get the gate by default (six runs per side) on 256 KiB arrays, which both
    # processes place alike: smaller ones come from each process's heap at offsets of
    # its own, up to 5% apart between identical checkouts over two runs (seen in CI).
    candidate = checkouts(tmp_path)
    for side in (candidate, tmp_path / "baseline"):
        source = (side / "test_bench.py").read_text()
        assert "1 << 14" in source
        (side / "test_bench.py").write_text(source.replace("1 << 14", "1 << 16"))
    # False-fail chance 1e-5 per run by design (user_runs.IDENTICAL_CODE).
    done = run(candidate, "--gpu-bench-against=../baseline", "--gpu-isolate=backend",
               *IDENTICAL_CODE, slow=1)
    assert_passed(candidate, done, "numpy")
