"""The gate's processes keep their compiled modules in a folder of the session's own
when the user's environment forbids writing them, and write nothing beside the code.

With ``PYTHONDONTWRITEBYTECODE`` set (common in container images, and on this
project's CI machine), every process of ``--gpu-bench-against`` compiled again every
module pytest rewrites (all of hypothesis, this plugin): 2.4 s against 1.2 s for a
one-benchmark collection, and one NumPy benchmark took 100 s against 41 s with the
modules kept (``processes/peers.py``, :func:`bytecode_folder`).  The peers now write
them under a temporary ``PYTHONPYCACHEPREFIX`` that one collection per checkout fills
before they start, removed at the session's end.

Each run's own conftest writes down, in every process it is loaded in, where that
process keeps compiled modules.  Broken twins seen failing here: the variable dropped
without a folder (``__pycache__`` beside the user's code), the folder left behind, no
collection to fill it before the peers start; and the folder made without the variable
set (the user's own setting overridden).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from user_runs import run_pytest, start_command

pytestmark = pytest.mark.slow

#: Each process the conftest is loaded in writes one line: its pid, how it was started
#: (a serving peer, a collection, the lead) and where it keeps compiled modules.
RECORDING_CONFTEST = textwrap.dedent("""\
    import json, os, sys
    from pathlib import Path

    def pytest_configure(config):
        argv = " ".join(sys.argv)
        kind = ("peer" if "--gpu-bench-peer=" in argv
                else "collection" if "--collect-only" in argv else "lead")
        line = {"pid": os.getpid(), "kind": kind, "root": str(config.rootpath),
                "prefix": sys.pycache_prefix, "no_bytecode": sys.dont_write_bytecode}
        with open(os.environ["BYTECODE_RECORDS"], "a") as out:
            out.write(json.dumps(line) + "\\n")
    """)

BENCH = textwrap.dedent("""\
    import numpy as np


    def test_k(gpu_benchmark):
        x = np.ones(256)
        gpu_benchmark(np.multiply, x, 2.0)
    """)


#: The gate's two ways of starting processes: ``--gpu-bench-against``'s pairs (two of
#: them, a collection in each checkout) and the stored gate's fresh processes (two, in
#: this checkout).
MODES = {"against": (4, ("baseline", "candidate")), "save": (2, ("candidate",))}


def _run(tmp_path: Path, no_bytecode: str,
         mode: str = "against") -> tuple[Any, list[dict[str, Any]], Path]:
    baseline, candidate, tmp = tmp_path / "baseline", tmp_path / "candidate", tmp_path / "tmp"
    for root in (baseline, candidate, tmp):
        root.mkdir()
    for root in (baseline, candidate):
        (root / "pytest.ini").write_text("[pytest]\ngpu_backends = numpy\n"
                                         "gpu_bench_replicates = 2\ngpu_bench_budget = 1\n"
                                         "gpu_bench_processes = 2\n")
        (root / "conftest.py").write_text(RECORDING_CONFTEST)
        (root / "test_bench.py").write_text(BENCH)
    records = tmp_path / "records.jsonl"
    how = f"--gpu-bench-against={baseline}" if mode == "against" else "--gpu-bench-save"
    done = run_pytest(candidate, "-n0", "-q", how,
                      timeout=600, extra_env={"PYTHONDONTWRITEBYTECODE": no_bytecode,
                                              "TMPDIR": str(tmp),
                                              "BYTECODE_RECORDS": str(records)})
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    return done, lines, tmp


@pytest.mark.parametrize("mode", sorted(MODES))
def test_peers_keep_compiled_modules_in_a_folder_of_their_own_and_remove_it(
        tmp_path: Path, mode: str) -> None:
    count, sides = MODES[mode]
    done, lines, tmp = _run(tmp_path, "1", mode)
    assert done.returncode == 0, done.stdout + done.stderr
    # Nothing written beside the user's code.
    assert not list(tmp_path.rglob("__pycache__"))
    lead = [line for line in lines if line["kind"] == "lead"]
    peers = [line for line in lines if line["kind"] == "peer"]
    collections = [line for line in lines if line["kind"] == "collection"]
    # The user's own process is left as the user set it.
    assert [(line["prefix"], line["no_bytecode"]) for line in lead] == [(None, True)]
    # Each process writes its compiled modules into one folder of the session's own,
    # under the temporary folder.
    assert len(peers) == count
    folders = {line["prefix"] for line in peers}
    assert len(folders) == 1
    assert all(not line["no_bytecode"] for line in peers)
    folder = Path(folders.pop())
    assert folder.parent == tmp
    assert folder.name.startswith("gpucheck-bytecode-")
    # One collection in each checkout filled it before the peers started (the lines are
    # written in the order the processes configured).
    assert sorted(line["root"] for line in collections) == [
        str(tmp_path / side) for side in sides]
    assert {line["prefix"] for line in collections} == {str(folder)}
    kinds = [line["kind"] for line in lines]
    assert max(i for i, k in enumerate(kinds) if k == "collection") < kinds.index("peer")
    # The folder gone with the session.
    assert not folder.exists()
    assert not list(tmp.iterdir())


def test_peers_write_compiled_modules_as_python_does_where_the_user_allows_it(
        tmp_path: Path) -> None:
    # An empty value is unset to Python: the user's environment writes compiled modules.
    done, lines, _ = _run(tmp_path, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {(line["kind"], line["prefix"], line["no_bytecode"]) for line in lines} == {
        ("lead", None, False), ("peer", None, False)}


def test_a_lead_killed_outright_leaves_a_folder_the_next_run_removes(tmp_path: Path) -> None:
    # A lead killed outright (CI's timeout, the OOM killer) cleans nothing up: its
    # compiled-module folder stayed in the temporary folder for good.  It carries the
    # lead's pid, so the next run removes it.  The broken twin (folders named as before,
    # or no sweep) leaves two folders after the second run.
    baseline, candidate, tmp = tmp_path / "baseline", tmp_path / "candidate", tmp_path / "tmp"
    for root in (baseline, candidate, tmp):
        root.mkdir()
    for root in (baseline, candidate):
        (root / "pytest.ini").write_text("[pytest]\ngpu_backends = numpy\n"
                                         "gpu_bench_replicates = 2\ngpu_bench_budget = 1\n")
        (root / "conftest.py").write_text(RECORDING_CONFTEST)
        (root / "test_bench.py").write_text(BENCH)
    records = tmp_path / "records.jsonl"
    env = {"PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp), "BYTECODE_RECORDS": str(records)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-q",
               f"--gpu-bench-against={baseline}"]
    lead = start_command(command, candidate, extra_env=env, output=False)
    try:
        # Killed once its peers serve (the folder made and filled by then).
        deadline = time.monotonic() + 300
        while not (records.exists() and '"peer"' in records.read_text()):
            assert lead.poll() is None, "the lead ended before its peers started"
            assert time.monotonic() < deadline, "no peer started"
            time.sleep(0.2)
        os.kill(lead.pid, signal.SIGKILL)
    finally:
        lead.kill()
        lead.wait()
    left = sorted(tmp.glob("gpucheck-bytecode-*"))
    assert len(left) == 1
    # Its peers end with their connection.  Waited for, so that what the next run finds
    # is the kill's leftover (the sweep reads only the lead's pid: a run started
    # sooner would remove the folder under the ending peers, which only costs them
    # compiled modules they no longer need).
    peers = [json.loads(line)["pid"] for line in records.read_text().splitlines()
             if json.loads(line)["kind"] == "peer"]
    deadline = time.monotonic() + 120
    while any(_running(pid) for pid in peers):
        assert time.monotonic() < deadline, "the killed lead's peers did not end"
        time.sleep(0.2)
    assert left[0].exists()
    done = run_pytest(candidate, *command[5:], timeout=600, extra_env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(tmp.iterdir())


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (Linux; a zombie no longer does)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
