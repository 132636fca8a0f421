"""The folders a process makes for its children carry its pid, and a folder whose
process has died is removed by the next process that makes one of its kind
(``processes/guard.py``: :func:`scratch_folder`).

A lead killed outright removes nothing (the user-style run that kills one:
tests/bench/test_bench_peer_bytecode.py).  What the sweep must not remove is checked
here: a live process's folder, a folder of another PID namespace (a container sharing
the temporary folder, or another machine sharing it: their pids mean nothing here),
links, names without an owner.  Broken twins seen failing: the machine not compared
(the other machine's folder removed), the liveness not checked (this process's own
folder removed), ``/proc`` trusted in a PID namespace that kept its parent's (a live
process's folder removed).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from user_runs import run_command, start_command

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


#: Inside ``unshare --user --pid --fork`` (the parent's ``/proc`` kept): a live child
#: given the pid the zombie outside has (``ns_last_pid`` of the new namespace), a folder
#: named for it, and the sweep.
IN_NAMESPACE = textwrap.dedent("""
    import os, subprocess, sys, tempfile
    from pytest_gpucheck.processes import guard
    tempfile.tempdir = sys.argv[2]
    wanted = int(sys.argv[1])
    with open("/proc/sys/kernel/ns_last_pid", "w") as last:
        last.write(str(wanted - 1))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid == wanted, (child.pid, wanted)
        folder = os.path.join(sys.argv[2], f"gpucheck-bytecode-{child.pid}."
                              f"{guard._machine_tag()}-abc_1234")
        os.mkdir(folder)
        guard.remove_orphaned_folders("gpucheck-bytecode-")
        print("kept" if os.path.isdir(folder) else "removed")
    finally:
        child.kill()
""")


@pytest.mark.skipif(shutil.which("unshare") is None or sys.platform != "linux",
                    reason="needs Linux and util-linux's unshare")
def test_a_live_process_of_a_pid_namespace_keeping_its_parents_proc_is_not_removed(
        tmp_path: Path) -> None:
    """In ``unshare -p`` without a new ``/proc``, pid N of ``os.kill`` and ``/proc/N``
    are two processes: the live child inside read its state from the zombie with the
    same number outside, and its folder was removed (review finding, stop 29)."""
    zombie = start_command([sys.executable, "-c", "pass"], tmp_path, output=False)
    try:
        while guard._state_of(zombie.pid) not in ("Z", "X", ""):
            time.sleep(0.01)
        run = run_command(
            ["unshare", "--user", "--map-root-user", "--pid", "--fork", sys.executable,
             "-c", IN_NAMESPACE, str(zombie.pid), str(tmp_path)], tmp_path, timeout=120)
    finally:
        zombie.wait()
    if run.returncode != 0 and ("ns_last_pid" in run.stderr or "unshare:" in run.stderr):
        pytest.skip(f"user and PID namespaces not available here: {run.stderr[-300:]}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == ["kept"]
