"""``--gpu-isolate=backend`` starts one worker per device, not one per backend or pair.

A worker is replaced after a crash or a poisoned context, never because an
item names another framework: the interop suite's pairs of one device share
one worker (as every framework shares a process in a plain run), items known
at collection to be "not available" start nothing, a worker's collection
probes only the backends of its items, and in a plain session a worker is told
to finish as soon as no item ahead needs it.  Verdicts stay those of the
in-process run.  The subprocess runs are ``python -m pytest`` in a temporary
project, as users type them; a ``conftest.py`` logs which process ran what.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import user_runs
from user_runs import LEAN_ENV, LEAN_PLUGINS, junit_outcomes

from pytest_gpucheck.processes.routers.isolation import GPU, HOST, device_key

RUN_LIMIT = 400
SUITE = Path(__file__).resolve().parents[2] / "conformance" / "test_interop.py"

#: Logs, per process: its role and pid at session start, which modules it had
#: imported at session end, and the pid that ran each test.
CONFTEST = """
import os
import sys

import pytest
from hypothesis import settings

settings.register_profile("routing-fast", max_examples=2, deadline=None, derandomize=True)
settings.load_profile("routing-fast")


def _log(text):
    with open(os.environ["ROUTING_LOG"], "a") as handle:
        handle.write(f"{text}\\n")


def _role():
    return "worker" if os.environ.get("PYTEST_GPUCHECK_SERVE") or os.environ.get(
        "PYTEST_GPUCHECK_REPORT_SINK") else "parent"


def pytest_sessionstart(session):
    _log(f"session {_role()} {os.getpid()}")


def pytest_sessionfinish(session):
    loaded = [name for name in ("numba", "torch", "jax") if name in sys.modules]
    _log(f"modules {_role()} {os.getpid()} {','.join(loaded) or '-'}")


@pytest.fixture(autouse=True)
def _where(request):
    _log(f"item {os.getpid()} {request.node.name}")
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    (project / "routing.log").write_text("")
    return user_runs.run_pytest(project, *LEAN_PLUGINS, *args, timeout=RUN_LIMIT,
                                extra_env={**LEAN_ENV,
                                           "ROUTING_LOG": str(project / "routing.log")})


def _log(project: Path, kind: str) -> list[list[str]]:
    return [line.split()[1:] for line in (project / "routing.log").read_text().splitlines()
            if line.startswith(kind + " ")]


def test_the_items_of_one_device_share_its_worker() -> None:
    """GPU pairs (and a pair mixing GPU frameworks) share the GPU's worker, host items the
    host's: a key per backend or per pair (as before) gives pairs their own workers."""
    pairs = [{"cupy", "torch-cuda"}, {"jax-gpu"}, {"numba-cuda", "cuda-python"}, {"cupy"}]
    assert {device_key(names) for names in pairs} == {GPU}
    assert {device_key(names) for names in [{"numpy"}, {"jax-cpu", "torch-cpu"},
                                             {"numba-cpu"}]} == {HOST}
    # An item touching the GPU runs where the GPU's context is.
    assert device_key({"numpy", "cupy"}) == GPU


@pytest.mark.slow
def test_interop_pairs_share_one_worker_with_the_in_process_verdicts(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_interop.py").write_text(SUITE.read_text(encoding="utf-8"))
    # numba-cpu is selected but has no arrays of its own: no interop item names it.
    args = ("--gpu-backends=numpy,numba-cpu,jax-cpu,torch-cpu", "-k",
            "test_exchange and (nocopy or cai)", "--junitxml=junit.xml", "-rs")
    plain = run_pytest(tmp_path, *args, "--gpu-isolate=none")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    in_process = junit_outcomes(tmp_path / "junit.xml")
    result = run_pytest(tmp_path, *args, "--gpu-isolate=backend")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # The same verdict for every item, whichever process ran it.
    assert {n: o for n, (o, _) in junit_outcomes(tmp_path / "junit.xml").items()} == {
        n: o for n, (o, _) in in_process.items()}, output
    sessions = _log(tmp_path, "session")
    workers = [pid for role, pid in sessions if role == "worker"]
    # One worker for the 9 pairs of three host frameworks (a worker per pair: 6).
    assert len(workers) == 1, sessions
    ran = _log(tmp_path, "item")
    nocopy = [pid for pid, name in ran if "nocopy" in name]
    assert len(nocopy) == 9, ran
    assert set(nocopy) == set(workers), ran
    # The CAI cells are "not available" at collection (a host consumer imports no CUDA
    # memory): they never reach a worker, nor even a fixture.
    assert not [name for _, name in ran if "cai" in name], ran
    assert "cannot import __cuda_array_interface__" in result.stdout, output
    # The worker probed only its items' backends: numba-cpu, selected but in no item,
    # was never imported there.
    modules = {pid: loaded for role, pid, loaded in _log(tmp_path, "modules") if role == "worker"}
    assert "numba" not in modules[workers[0]].split(","), modules
    assert "torch" in modules[workers[0]].split(","), modules


IDLE_FIRST = """
import os


def test_routed(gpu_backend):
    with open(os.environ["ROUTING_LOG"], "a") as handle:
        handle.write(f"routed {os.getpid()}\\n")
"""

IDLE_SECOND = """
import os
import time


def _state(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(line.split()[1] for line in handle if line.startswith("State:"))
    except FileNotFoundError:
        return "gone"


def test_runs_after_the_worker_is_no_longer_needed():
    with open(os.environ["ROUTING_LOG"]) as handle:
        pid = next(line.split()[1] for line in handle if line.startswith("routed "))
    deadline = time.monotonic() + 60
    while _state(pid) not in ("Z", "gone") and time.monotonic() < deadline:
        time.sleep(0.2)
    # Finished (a zombie until the session reaps it) while this session still runs.
    assert _state(pid) in ("Z", "gone"), f"worker {pid} still {_state(pid)}"
"""


CRASHES = """
import ctypes
import os


def test_1_segfault(gpu_backend):
    if gpu_backend.name == "numpy":
        ctypes.string_at(0)


def test_2_exits(gpu_backend):
    if gpu_backend.name == "numba-cpu":
        os._exit(3)


def test_3_passes(gpu_backend):
    pass
"""


@pytest.mark.slow
def test_a_crash_in_the_shared_worker_fails_only_its_own_item(tmp_path: Path) -> None:
    """The worker two backends share dies on one backend's item: that item fails with the
    cause, the other backend's next item runs in a fresh worker and passes."""
    (tmp_path / "test_crashes.py").write_text(CRASHES)
    result = run_pytest(tmp_path, "--gpu-backends=numpy,numba-cpu", "--gpu-isolate=backend",
                        "--junitxml=junit.xml")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    outcomes = junit_outcomes(tmp_path / "junit.xml")
    assert {name: kind for name, (kind, _) in outcomes.items()} == {
        "test_1_segfault[numpy]": "failure", "test_1_segfault[numba-cpu]": "passed",
        "test_2_exits[numpy]": "passed", "test_2_exits[numba-cpu]": "failure",
        "test_3_passes[numpy]": "passed", "test_3_passes[numba-cpu]": "passed"}, output
    assert ("The isolation worker (numpy, numba-cpu) was killed by signal 11 (SIGSEGV) while "
            "running this test") in outcomes["test_1_segfault[numpy]"][1]
    assert "exited with code 3 while running this test" in outcomes[
        "test_2_exits[numba-cpu]"][1]


PRESTART_CONFTEST = """
import os


def pytest_configure(config):
    if os.environ.get("NO_PRESTART") == "1":
        # The broken variant: workers start on their first item, as before.
        from pytest_gpucheck.processes.pool import Worker

        Worker.start = lambda self: None
"""

PRESTART_FIRST = """
import os


def _serving_children():
    children = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/environ", "rb") as handle:
                serving = b"PYTEST_GPUCHECK_SERVE=" in handle.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and serving:
            children.append(int(entry))
    return children


def test_runs_in_the_parent_first():
    children = _serving_children()
    assert children, "no isolation worker had started before the first item"
    with open(os.environ["ROUTING_LOG"], "a") as handle:
        handle.write(f"prestarted {children[0]}\\n")
"""


def _prestart_project(tmp_path: Path, broken: bool) -> subprocess.CompletedProcess[str]:
    """A first item that runs in the parent and looks for the started worker, an item
    routed to it, and (for the correct run) an item in the parent after it that waits for
    the worker, no longer needed, to finish."""
    (tmp_path / "conftest.py").write_text(PRESTART_CONFTEST)
    (tmp_path / "test_a_first.py").write_text(PRESTART_FIRST)
    (tmp_path / "test_b_routed.py").write_text(IDLE_FIRST)
    if not broken:
        (tmp_path / "test_c_in_process.py").write_text(IDLE_SECOND)
    (tmp_path / "routing.log").write_text("")
    return user_runs.run_pytest(
        tmp_path, *LEAN_PLUGINS, "--gpu-backends=numpy", "--gpu-isolate=backend",
        timeout=RUN_LIMIT,
        extra_env={**LEAN_ENV, "ROUTING_LOG": str(tmp_path / "routing.log"),
                   "NO_PRESTART": "1" if broken else "0"})


@pytest.fixture(scope="module")
def prestarted(tmp_path_factory: pytest.TempPathFactory,
               ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One correct run serves the prestart and the idle-worker tests."""
    project = tmp_path_factory.mktemp("prestart")
    return project, _prestart_project(project, broken=False)


@pytest.mark.slow
def test_a_worker_no_item_ahead_needs_is_closed_while_the_session_goes_on(
        prestarted: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """The routed item is the worker's last: the item after it, in the parent, sees the
    worker finish while the session still runs."""
    _, result = prestarted
    output = result.stdout + result.stderr
    assert "3 passed" in result.stdout, output
    assert result.returncode == 0, output


@pytest.mark.slow  # isolation workers: left out of the fast loop
@pytest.mark.parametrize("broken", [False, True], ids=["prestart", "broken-no-prestart"])
def test_the_worker_starts_before_the_first_item(
        tmp_path: Path, broken: bool,
        request: pytest.FixtureRequest) -> None:
    """Its start-up (Python, pytest, the frameworks' imports, its collection) overlaps the
    items that run elsewhere instead of waiting for its own first item; the routed item
    then runs in that very worker."""
    if broken:
        result = _prestart_project(tmp_path, broken=True)
        output = result.stdout + result.stderr
        assert "no isolation worker had started before the first item" in output, output
        assert "1 failed, 1 passed" in output, output
        return
    project, result = request.getfixturevalue("prestarted")
    output = result.stdout + result.stderr
    assert "3 passed" in output, output
    log = (project / "routing.log").read_text().split()
    assert log[log.index("prestarted") + 1] == log[log.index("routed") + 1], log
