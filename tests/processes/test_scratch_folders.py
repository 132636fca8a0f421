"""The folders a process makes for its children carry its pid, and a folder whose
process has died is removed by the next process that makes one of its kind
(``processes/guard.py``: :func:`scratch_folder`).

A lead killed outright removes nothing (the user-style run that kills one:
tests/bench/test_bench_peer_bytecode.py).  What the sweep must not remove is checked
here: a live process's folder, a folder of another PID namespace (a container sharing
the temporary folder, whose pids mean nothing here), names without an owner.  Broken
twins seen failing: the namespace not compared (the container's folder removed), the
liveness not checked (this process's own folder removed).
"""

from __future__ import annotations

import os
import sys
import tempfile
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


def test_only_the_folders_of_dead_processes_of_this_namespace_are_removed(
        temporary: Path) -> None:
    namespace = guard._pid_namespace()
    dead = _dead_pid(temporary)
    folders = {
        "dead": temporary / f"gpucheck-bytecode-{dead}.{namespace}-abc_1234",
        "alive": temporary / f"gpucheck-bytecode-{os.getpid()}.{namespace}-abc_1234",
        "elsewhere": temporary / f"gpucheck-bytecode-{dead}.{namespace}9-abc_1234",
        "no owner": temporary / "gpucheck-bytecode-abc_1234",
        "other kind": temporary / f"gpucheck-child-{dead}.{namespace}-abc_1234",
    }
    for folder in folders.values():
        folder.mkdir()
        (folder / "module.pyc").write_bytes(b"")
    made = guard.scratch_folder("gpucheck-bytecode-")
    assert made.parent == temporary
    assert made.name.startswith(f"gpucheck-bytecode-{os.getpid()}.{namespace}-")
    assert {name for name, folder in folders.items() if not folder.exists()} == {"dead"}
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
