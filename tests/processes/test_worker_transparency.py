"""A test run in a worker behaves as if it ran in pytest itself: the same column twice.

One small project (printing, warnings, properties, logging, a slow test, failures) runs
once in-process (``--gpu-isolate=none``) and once under each process kind the plugin
runs items in: an isolation worker (``--gpu-isolate=backend``), the numba-cudasim child,
and MPI ranks in spawned mode.  Each row of :data:`FEATURES` reads one feature from a
run (outcomes, output lines, the junit file, the cache) and must read the same from the
in-process run and from each process kind (or what :data:`EXPECTED_DIFFERENT` states
for a kind, each with its reason).  One run per kind checks every row at once.
"""

from __future__ import annotations

import re
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from user_runs import start_command

pytestmark = pytest.mark.slow

CONFTEST = """
import os
import pytest


@pytest.fixture
def handshake():
    '''Under -s the harness answers a printed line by creating a file: the test waits for
    it, so it passes only if its output reached the terminal while it was running.'''
    if os.environ.get("T_MPI"):
        yield None  # MPI ranks do not stream (their column says so)
        return
    yield os.path.join(os.environ["T_DIR"], "go")
"""

TESTS = '''
import logging
import os
import sys
import time
import warnings

import pytest

pytestmark = [pytest.mark.mpi(ranks=2)] if os.environ.get("T_MPI") else []


def test_prints(gpu_backend, handshake, record_property, record_testsuite_property):
    print("LIVE-LINE printed while the test runs", flush=True)
    print("ERR-LINE", file=sys.stderr, flush=True)
    if handshake is not None:
        deadline = time.monotonic() + 60
        while not os.path.exists(handshake):
            assert time.monotonic() < deadline, "the printed line never reached the terminal"
            time.sleep(0.05)
    warnings.warn("WARNED-IN-TEST", UserWarning)
    record_property("item_prop", "one")
    record_testsuite_property("suite_prop", "two")


def test_logs(gpu_backend):
    logging.getLogger("t").warning("PASS-LOG")


def test_slow(gpu_backend):
    time.sleep(0.4)


def test_warning_is_error(gpu_backend):
    warnings.warn("DEPRECATED-IN-TEST", DeprecationWarning)


def test_fails(gpu_backend):
    logging.getLogger("t").warning("FAIL-LOG")
    assert 1 == 2


def test_after_maxfail(gpu_backend):
    with open(os.path.join(os.environ["T_DIR"], "after-ran"), "a") as handle:
        handle.write("x")
'''

ARGS = ("-s", "-rA", "--durations=0", "--junitxml=junit.xml", "--maxfail=2",
        "-W", "error::DeprecationWarning")


@dataclass
class Run:
    """One run of the project: what a feature row reads."""

    kind: str
    returncode: int
    output: str
    project: Path

    def junit(self) -> ET.Element:
        return ET.parse(self.project / "junit.xml").getroot()


def _plain(name: str) -> str:
    """A test name without its backend parameter (numpy / numba-cudasim)."""
    return re.sub(r"\[[^\]]*\]", "", name)


def run_project(where: Path, kind: str) -> Run:
    """Write the project into ``where`` and run it as a user does, reading its output as it
    comes (the handshake answers the live line)."""
    where.mkdir()
    (where / "conftest.py").write_text(CONFTEST)
    (where / "test_t.py").write_text(TESTS)
    backends, isolate, env = {
        "in-process": ("numpy", "none", {}),
        "isolation worker": ("numpy", "backend", {}),
        "numba-cudasim child": ("numba-cudasim", "auto", {}),
        "MPI ranks": ("numpy", "auto", {"T_MPI": "1"}),
    }[kind]
    process = start_command([sys.executable, "-m", "pytest", f"--gpu-backends={backends}",
                             f"--gpu-isolate={isolate}", *ARGS], where,
                            extra_env={**env, "T_DIR": str(where)})
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "LIVE-LINE" in line:
                (where / "go").touch()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.wait(timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(timeout=10)
    # Paths differ by project folder only.
    return Run(kind, process.returncode, "".join(lines).replace(str(where), "<project>"), where)


# -- the features: each reads one thing from a run ----------------------------------------
def outcomes(run: Run) -> dict[str, str]:
    """Every item's outcome in the junit file (the item after --maxfail=2 is absent)."""
    result = {}
    for case in run.junit().iter("testcase"):
        outcome = next((child.tag for child in case
                        if child.tag in ("failure", "error", "skipped")), "passed")
        result[_plain(case.get("name", ""))] = outcome
    return result


def maxfail_stops(run: Run) -> tuple[str, bool]:
    """--maxfail=2: the run says it stopped, and the item after the second failure never
    started (it would leave a file)."""
    stopped = "stopping after 2 failures" in run.output
    return ("stopped" if stopped else "not stopped"), (run.project / "after-ran").exists()


def streamed_output(run: Run) -> list[str]:
    """-s: the printed lines are on the terminal (as printed lines, not as the source line
    of a traceback), and the test that printed passed: it waited for the harness's answer
    to its first line, so that line came while the test ran."""
    printed = [line for line in run.output.splitlines()
               if re.search(r"(^|\s)(LIVE-LINE printed while the test runs|ERR-LINE)$", line)]
    return [*sorted(re.sub(r"^.*\s(?=LIVE|ERR)", "", line) for line in printed),
            outcomes(run).get("test_prints", "missing")]


def warnings_summary(run: Run) -> list[str]:
    """The warnings summary's warning lines, and the count in the last line."""
    summary = run.output.partition("warnings summary")[2].partition("-- Docs")[0]
    found = sorted(_plain(line.strip()) for line in summary.splitlines() if "Warning:" in line)
    count = re.search(r"(\d+) warnings?", run.output.splitlines()[-1] if run.output else "")
    return [*found, f"count {count.group(1) if count else 0}"]


def warning_as_error(run: Run) -> str:
    """-W error::DeprecationWarning fails the test that warns."""
    return outcomes(run).get("test_warning_is_error", "missing")


def durations(run: Run) -> list[str]:
    """--durations=0 lists the slow test's call, at least as long as it slept."""
    found = []
    for line in run.output.splitlines():
        match = re.match(r"\s*(\d+\.\d+)s call\s+(\S+)", line)
        if match and "test_slow" in match.group(2) and float(match.group(1)) >= 0.4:
            found.append("test_slow call >= 0.4s")
    return found


def properties(run: Run) -> dict[str, list[tuple[str, str]]]:
    """record_property on the testcase and record_testsuite_property on the suite."""
    root = run.junit()
    suite = next(root.iter("testsuite"))
    own = suite.find("properties")
    result = {"suite": sorted((p.get("name", ""), p.get("value", ""))
                              for p in (own if own is not None else []))}
    for case in root.iter("testcase"):
        # The plugin's own backend and device properties name the backend the kind runs.
        props = [(p.get("name", ""), "" if p.get("name") in ("gpucheck.backend",
                  "gpucheck.device") else p.get("value", "")) for p in case.iter("property")]
        if props:
            result[_plain(case.get("name", ""))] = sorted(props)
    return result


def captured_log(run: Run) -> list[str]:
    """The captured log sections: on failure (FAIL-LOG) and with -rP for a pass (PASS-LOG)."""
    failures = run.output.partition("= FAILURES =")[2].partition("warnings summary")[0]
    passes = run.output.partition("= PASSES =")[2]
    return [name for name, section in (("FAIL-LOG", failures), ("PASS-LOG", passes))
            if "Captured log call" in section and name in section]


def cache(run: Run) -> list[str]:
    """--lf / --ff: the cache records the failed items (the children run without one)."""
    path = run.project / ".pytest_cache" / "v" / "cache" / "lastfailed"
    if not path.exists():
        return ["no lastfailed file"]
    import json

    return sorted(_plain(nodeid) for nodeid in json.loads(path.read_text()))


FEATURES: dict[str, Callable[[Run], object]] = {
    "outcomes": outcomes,
    "-x / --maxfail": maxfail_stops,
    "-s streamed": streamed_output,
    "warnings summary": warnings_summary,
    "-W error": warning_as_error,
    "--durations": durations,
    "properties (junit)": properties,
    "captured log (failure, -rP)": captured_log,
    "--lf / --ff cache": cache,
}

KINDS = ("isolation worker", "numba-cudasim child", "MPI ranks")

#: (kind, feature) -> why that kind's column differs, and the line it prints instead.
EXPECTED_DIFFERENT: dict[tuple[str, str], tuple[str, str]] = {
    ("MPI ranks", "-s streamed"): (
        "the launcher owns the ranks' output: it is captured and shown in the sections",
        "gpucheck: -s does not stream what MPI ranks print"),
}


class Runs:
    """Each kind's run, made when a test first asks for it (``-k`` on one kind runs two)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.done: dict[str, Run] = {}

    def __getitem__(self, kind: str) -> Run:
        if kind not in self.done:
            self.done[kind] = run_project(self.base / re.sub(r"\W+", "-", kind), kind)
        return self.done[kind]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("transparency"))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("feature", list(FEATURES))
def test_same_column_twice(runs: Runs, kind: str, feature: str) -> None:
    """Each feature reads the same from ``kind``'s run as from the in-process run."""
    read = FEATURES[feature]
    reference, other = runs["in-process"], runs[kind]
    assert reference.returncode == other.returncode == 1, (
        f"exit codes: in-process {reference.returncode}, {kind} {other.returncode}\n"
        f"{other.output[-3000:]}")
    if (kind, feature) in EXPECTED_DIFFERENT:
        _, line = EXPECTED_DIFFERENT[kind, feature]
        assert line in other.output, other.output[-3000:]
        return
    expected = read(reference)
    assert expected, f"{feature}: the in-process run shows nothing to compare"
    assert read(other) == expected, f"{feature} under {kind}:\n{other.output[-4000:]}"


def test_mpi_ranks_output_is_in_sections(runs: Runs) -> None:
    """Under -s, what MPI ranks printed is not lost: each test's captured stdout shows it."""
    passes = runs["MPI ranks"].output.partition("= PASSES =")[2]
    assert "Captured stdout call" in passes, passes[-3000:]
    assert "LIVE-LINE" in passes, passes[-3000:]
