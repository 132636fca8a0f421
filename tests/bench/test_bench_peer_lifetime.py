"""The gate's processes end with the pytest that started them.

``--gpu-bench-against`` starts pairs of pytest processes.  When the pytest a user
started disappears (killed by CI's timeout, the OOM killer, SIGTERM's default
action), a process of a pair busy in a long collection or test setup must not go on
for minutes: nothing the plugin starts outlives the session.  The broken twin is the
peer without its orphan guard: a baseline whose collection sleeps for ten minutes
outlived its lead by those ten minutes.  Nor does a file: each peer's output had a
named log in the temporary folder, removed by the lead when the peer ended well, so a
killed lead left one per peer (CI's temporary folder gathered them run after run).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from user_runs import start_command

pytestmark = pytest.mark.slow

#: Generous hang guards: on a loaded 2-core machine the lead's start and collection
#: take seconds; the peers' end after the lead's is what the test judges, and the guard
#: polls four times a second.
START_GUARD = 300.0
END_GUARD = 60.0


def peers_of(candidate: Path, parent: int | None = None) -> list[int]:
    """Pids of the gate's processes started for ``candidate`` (their command line holds
    ``pytest_gpucheck.bench.interleave`` and the candidate's root), only the children of
    ``parent`` when given: a process a peer forks has the peer's command line until it
    runs its own program, and on a loaded machine one was seen between the two."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            # The field after the command's parenthesised name: state, then the parent.
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        words = [word.decode(errors="replace") for word in argv]
        if ("pytest_gpucheck.bench.interleave" in words and str(candidate) in words
                and parent in (None, ppid)):
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_the_gates_processes_end_when_the_lead_is_killed(tmp_path: Path) -> None:
    baseline, candidate = tmp_path / "baseline", tmp_path / "candidate"
    started = tmp_path / "baseline-collecting"
    bench = textwrap.dedent("""\
        import numpy as np


        def test_k(gpu_benchmark):
            x = np.ones(64, np.float32)
            gpu_benchmark(lambda: x * 2.0)
        """)
    for root in (baseline, candidate):
        root.mkdir()
        (root / "pytest.ini").write_text("[pytest]\ngpu_backends = numpy\n"
                                         "gpu_bench_replicates = 2\n")
    (candidate / "test_bench.py").write_text(bench)
    # The baseline's collection takes ten minutes: its processes are busy when the lead
    # dies, and nothing the lead could still send them would end them.
    (baseline / "test_bench.py").write_text(textwrap.dedent(f"""\
        import pathlib, time
        pathlib.Path({str(started)!r}).touch()
        time.sleep(600)
        """) + bench)
    # The run's own temporary folder, to see what the gate leaves there.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    lead = start_command([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-q",
                          f"--gpu-bench-against={baseline}"], candidate, output=False,
                         new_session=True, extra_env={"TMPDIR": str(temporary)})
    try:
        deadline = time.monotonic() + START_GUARD
        while not (started.exists() and peers_of(candidate)):
            assert lead.poll() is None, f"the lead ended first (exit {lead.returncode})"
            assert time.monotonic() < deadline, "the baseline processes never started"
            time.sleep(0.2)
        peers = peers_of(candidate)
        lead.kill()
        lead.wait()
        deadline = time.monotonic() + END_GUARD
        while (alive := peers_of(candidate)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive, (f"{len(alive)} of the gate's {len(peers)} processes outlived "
                           f"the killed lead by {END_GUARD:g} s")
        left = sorted(path.name for path in temporary.glob("gpucheck-baseline-peer-*"))
        assert left == [], f"the killed lead's {len(peers)} processes left {left}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lead.pid, signal.SIGKILL)
        for pid in peers_of(candidate):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


#: Two benchmarks no look can decide: each process draws how much work its calls do,
#: so the pairs' ratios differ by up to 4x, and the family level is 1e-5.
UNDECIDABLE_BENCH = textwrap.dedent("""\
    import random

    import numpy as np
    import pytest

    REPEAT = random.choice([1, 4])


    @pytest.mark.parametrize("size", [1 << 12, 1 << 13])
    def test_undecidable(gpu_benchmark, size):
        x = np.ones(size, np.float32)

        def kernel():
            for _ in range(REPEAT):
                2.5 * x + x

        gpu_benchmark(kernel)
    """)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_a_look_holds_its_own_pairs_not_every_pair_the_benchmark_started(
        tmp_path: Path) -> None:
    """Two pairs every benchmark shares, then looks of two more up to ten pairs, for two
    benchmarks.  Each pair a later look adds is asked to end once it has timed the
    benchmark, and waited for before the next look starts its own: at most the shared
    pairs and one look's new ones are alive (8 processes).  Broken twins: added pairs
    kept until the benchmark's end held all 20 at the last look (at the default
    schedule 60 processes: 57 torch-cpu ones of about 400 MB ran a 24 GB machine out
    of memory, stop 30); asked to end but not waited for, the last look's overlapped
    the next look's on a loaded machine (12 here, 13 on stop 30's CI); retired peers
    remembered by ``id``, a new peer at a reaped one's address was taken as retired and
    never ended (13 where 12 were the bound of a 3-benchmark run, stop 31).

    False-fail chance: each benchmark must reach its last look.  With every process's
    work drawn from two sizes, an earlier decision needs the first 16 processes to draw
    alike (2 in 2**16) and an interval within 5% at level 1e-5 (t about 11 on 7
    degrees of freedom) besides: below 1e-4 a benchmark, 2e-4 in all."""
    baseline, candidate = tmp_path / "baseline", tmp_path / "candidate"
    for root in (baseline, candidate):
        root.mkdir()
        (root / "pytest.ini").write_text(
            "[pytest]\ngpu_backends = numpy\ngpu_bench_replicates = 2\n"
            "gpu_bench_rounds = 10\ngpu_bench_max_rounds = 10\ngpu_bench_budget = 900\n")
        (root / "test_bench.py").write_text(UNDECIDABLE_BENCH)
    lead = start_command([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0",
                          f"--gpu-bench-against={baseline}", "--gpu-bench-family-level=1e-5"],
                         candidate, new_session=True)
    peak: list[int] = []
    try:
        deadline = time.monotonic() + START_GUARD
        while lead.poll() is None:
            assert time.monotonic() < deadline, "the run did not end"
            if len(alive := peers_of(candidate, parent=lead.pid)) > len(peak):
                peak = alive
            time.sleep(0.05)
        output = lead.stdout.read() if lead.stdout is not None else ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lead.pid, signal.SIGKILL)
        lead.wait()
    assert lead.returncode == 0, output
    assert output.count("10 of 10 pairs done") == 2, output
    assert 4 <= len(peak) <= 8, (f"{len(peak)} of the gate's processes alive at once "
                                 f"(pids {sorted(peak)})")


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_sigterm_ends_the_gate_with_its_processes_and_folders(tmp_path: Path) -> None:
    """SIGTERM to the lead while the gate times (a CI job cancelled or past its
    timeout; ``timeout``'s signal): the run ends as Ctrl-C ends it, exit code 143 and
    one line saying so; every peer has ended when the lead has, and the peers'
    compiled-module folder is gone.  Broken twin (no handler): the lead died at once,
    silently, exit -15; its peers were left to their orphan guards and its
    ``gpucheck-bytecode-*`` folder to the next run's sweep."""
    baseline, candidate = tmp_path / "baseline", tmp_path / "candidate"
    for root in (baseline, candidate):
        root.mkdir()
        (root / "pytest.ini").write_text(
            "[pytest]\ngpu_backends = numpy\ngpu_bench_replicates = 2\n"
            "gpu_bench_rounds = 10\ngpu_bench_max_rounds = 10\ngpu_bench_budget = 900\n")
        (root / "test_bench.py").write_text(UNDECIDABLE_BENCH)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    # PYTHONDONTWRITEBYTECODE: the lead makes the peers a folder for compiled modules.
    lead = start_command([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0",
                          f"--gpu-bench-against={baseline}", "--gpu-bench-family-level=1e-5"],
                         candidate, new_session=True,
                         extra_env={"TMPDIR": str(temporary), "PYTHONDONTWRITEBYTECODE": "1"})
    assert lead.stdout is not None
    lines: list[str] = []
    try:
        # The first pair's figure is printed while the next pairs are timed.
        while not any("1 of 2 pairs done" in line for line in lines[-1:]):
            line = lead.stdout.readline()
            assert line, "the run ended before its gate timed a pair:\n" + "".join(lines)
            lines.append(line)
        assert list(temporary.glob("gpucheck-bytecode-*")), "no folder to see removed"
        os.kill(lead.pid, signal.SIGTERM)
        output = "".join(lines) + lead.stdout.read()
        lead.wait(timeout=START_GUARD)
        alive = peers_of(candidate)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lead.pid, signal.SIGKILL)
        lead.wait()
        for pid in peers_of(candidate):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert lead.returncode == 143, output
    assert ("gpucheck: stopped by SIGTERM while the benchmark gate was timing; its "
            "processes were ended") in output, output
    assert "was not used at all" not in output, output
    assert alive == [], f"{len(alive)} of the gate's processes outlived the lead: {alive}"
    left = sorted(path.name for path in temporary.glob("gpucheck-*"))
    assert left == [], f"the lead stopped by SIGTERM left {left}"
