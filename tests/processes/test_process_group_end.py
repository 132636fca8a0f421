"""A multi-process job past its timeout is asked to end before it is killed.

The JAX multi-process checks run ``mpiexec`` in a process group of its own
(``processes.run_process_group``).  Killed outright at its timeout (SIGKILL to the
group), MPICH's launcher never removed the file it writes in ``/tmp``
(``hydra_hwloc_xmlfile_*``; it does when it ends by SIGTERM), and a machine's
``/tmp`` gathered one per killed job.  The launcher here is a stand-in that does what
hydra does: it removes its file on SIGTERM.  Broken twin seen failing: SIGKILL at
once (the file stays).
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

from pytest_gpucheck.processes import run_process_group
from pytest_gpucheck.processes.guard import TERMINATE_GRACE

#: A launcher that writes a file and removes it when asked to end (SIGTERM), as
#: MPICH's hydra does with its ``/tmp/hydra_hwloc_xmlfile_*``.
LAUNCHER = textwrap.dedent("""\
    import pathlib, signal, sys, time
    left = pathlib.Path(sys.argv[1])
    left.write_text("hwloc")

    def end(*_):
        left.unlink()
        sys.exit(143)

    signal.signal(signal.SIGTERM, end)
    print("launched", flush=True)
    time.sleep(600)
    """)

#: A rank that ignores SIGTERM: only the kill after the grace ends it.
DEAF = textwrap.dedent("""\
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("deaf", flush=True)
    time.sleep(600)
    """)

#: Seconds before the job is ended: ample for an interpreter to start and set its
#: handler on a loaded machine (the false-fail chance is a start slower than this).
TIMEOUT = 10.0


def test_a_job_past_its_timeout_is_asked_to_end_and_cleans_up(tmp_path: Path) -> None:
    left = tmp_path / "hydra_hwloc_xmlfile"
    code, output, killed = run_process_group([sys.executable, "-c", LAUNCHER, str(left)],
                                             timeout=TIMEOUT)
    assert killed
    assert "launched" in output
    assert code == 143, output
    assert not left.exists(), "the launcher was killed before it could remove its file"


def test_a_job_that_ignores_the_request_is_killed_after_the_grace(tmp_path: Path) -> None:
    began = time.monotonic()
    code, output, killed = run_process_group([sys.executable, "-c", DEAF], timeout=TIMEOUT)
    took = time.monotonic() - began
    assert killed
    assert "deaf" in output
    assert code == -9
    # Hang guard, not a timing judgement: it ended at the kill, not at its 600 s sleep.
    assert took < TIMEOUT + TERMINATE_GRACE + 60, took
