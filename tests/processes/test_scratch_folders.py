"""The folders a process makes for its children carry its pid, and a folder whose
process has died is removed by the next process that makes one of its kind
(``processes/guard.py``: :func:`scratch_folder`).

A lead killed outright removes nothing (the user-style run that kills one:
tests/bench/test_bench_peer_bytecode.py).  What the sweep must not remove is checked
here: a live process's folder, a folder of another PID namespace (a container sharing
the temporary folder, or another machine sharing it: their pids mean nothing here),
links, names without an owner.  Broken twins seen failing: the machine not compared
(the other machine's folder removed), the liveness not checked (this process's own
folder removed).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
from user_runs import start_command

from pytest_gpucheck.processes import guard


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(guard, "_swept", set())
    return tmp_path


def _dead_pid(where: Path) -> int:
    child = start_command([sys.executable, "-c", "pass"], where, output=False)
    child.wait()
    return child.pid


def test_only_the_folders_of_dead_processes_of_this_machine_are_removed(
        temporary: Path) -> None:
    machine = guard._machine_tag()
    other = f"{(int(machine, 16) + 1) % 16**8:08x}"
    dead = _dead_pid(temporary)
    zombie = start_command([sys.executable, "-c", "pass"], temporary, output=False)
    while guard._state_of(zombie.pid) not in ("Z", "X", ""):  # ended, not yet reaped
        time.sleep(0.01)
    target = temporary / "elsewhere"
    target.mkdir()
    folders = {
        "dead": temporary / f"gpucheck-bytecode-{dead}.{machine}-abc_1234",
        "zombie": temporary / f"gpucheck-bytecode-{zombie.pid}.{machine}-abc_1234",
        "alive": temporary / f"gpucheck-bytecode-{os.getpid()}.{machine}-abc_1234",
        "other machine": temporary / f"gpucheck-bytecode-{dead}.{other}-abc_1234",
        "no owner": temporary / "gpucheck-bytecode-abc_1234",
        "huge pid": temporary / f"gpucheck-bytecode-{10**30}.{machine}-abc_1234",
        "other kind": temporary / f"gpucheck-child-{dead}.{machine}-abc_1234",
    }
    for folder in folders.values():
        folder.mkdir()
        (folder / "module.pyc").write_bytes(b"")
    link = temporary / f"gpucheck-bytecode-{dead}.{machine}-link_123"
    link.symlink_to(target)
    made = guard.scratch_folder("gpucheck-bytecode-")
    zombie.wait()
    assert made.parent == temporary
    assert made.name.startswith(f"gpucheck-bytecode-{os.getpid()}.{machine}-")
    assert {name for name, folder in folders.items() if not folder.exists()} == {
        "dead", "zombie"}
    assert link.is_symlink()
    assert target.is_dir()
    # The kind's sweep is done once a process: a folder orphaned later waits for the
    # next process (a run makes many children's folders).
    folders["dead"].mkdir()
    guard.scratch_folder("gpucheck-bytecode-")
    assert folders["dead"].exists()


def test_a_scratch_directory_is_removed_at_the_end_of_its_block(temporary: Path) -> None:
    with guard.scratch_directory("gpucheck-child-") as sink:
        assert Path(sink).is_dir()
        (Path(sink) / "reports.jsonl").write_text("{}")
    assert not Path(sink).exists()
    assert not list(temporary.iterdir())
