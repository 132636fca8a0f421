"""Long-lived child pytest processes the plugin talks to over a socket pair: the
benchmark gate's peers (``bench/interleave.py`` speaks their protocol; this module
owns their processes).

A peer is started here with its output file, its environment (this process's, without
what would make it a child of another part of the plugin, :data:`PEER_DROPPED_ENV`)
and one end of a socket pair; it is polled while the other side waits for it, asked
to end by closing the connection, and killed when it does not end in time.  Its
return code is read here (:attr:`PeerProcess.returncode`), so a peer that dies is
always seen by the side that started it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from pytest_gpucheck.environment import (
    CONFTESTS_VARIABLE,
    PARENT_VARIABLE,
    REPORT_SINK_VARIABLE,
    SERVE_VARIABLE,
)
from pytest_gpucheck.processes.guard import scratch_folder

#: Environment variables of this process a peer must not inherit: xdist's, and those
#: that make this process a child of the plugin (an isolation worker, the simulator
#: child): a peer started there would write its reports into that child's report sink
#: (the parent would take the baseline's results for the candidate's) and load the
#: candidate's conftests in the baseline checkout.
PEER_DROPPED_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                    "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS",
                    REPORT_SINK_VARIABLE, CONFTESTS_VARIABLE, PARENT_VARIABLE, SERVE_VARIABLE)

#: The variable that keeps Python from writing compiled modules, and the one that names
#: a folder to write them to instead (Python 3.8+; pytest's rewriter honours both).
NO_BYTECODE_VARIABLE = "PYTHONDONTWRITEBYTECODE"
BYTECODE_PREFIX_VARIABLE = "PYTHONPYCACHEPREFIX"


def peer_environment(bytecode: Path | None = None) -> dict[str, str]:
    """A peer's environment: this process's without :data:`PEER_DROPPED_ENV`; with a
    ``bytecode`` folder (:func:`bytecode_folder`), the peer keeps its compiled modules
    there instead of not at all."""
    env = {k: v for k, v in os.environ.items() if k not in PEER_DROPPED_ENV}
    if bytecode is not None:
        env.pop(NO_BYTECODE_VARIABLE, None)
        env[BYTECODE_PREFIX_VARIABLE] = str(bytecode)
    return env


def bytecode_folder() -> Path | None:
    """A folder of its own for the peers' compiled modules when this process may not
    write them (``PYTHONDONTWRITEBYTECODE``, common in container images, or ``python
    -B``), else None (the peers then write them where Python always does).

    Why: pytest compiles the modules of every installed pytest plugin's distribution
    through its assertion rewriter (all of hypothesis, this plugin), and without a place
    to keep them every peer compiled them again: 2.4 s against 1.2 s per process for a
    one-benchmark collection, ~60 processes per benchmark at the gate's default pairs
    and looks; one NumPy benchmark under ``--gpu-bench-against`` took 100 s against
    41 s with the modules kept (2 cores, load 1).  The folder is the peers'
    ``PYTHONPYCACHEPREFIX``: nothing is written beside the user's code or into their
    environment, as the variable asks; the caller removes it once its peers have ended
    (:func:`remove_bytecode_folder`).
    """
    if not sys.dont_write_bytecode:
        return None
    return scratch_folder("gpucheck-bytecode-")


def remove_bytecode_folder(folder: Path | None) -> None:
    """Remove a :func:`bytecode_folder` (after its peers have ended)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


class PeerProcess:
    """One peer process: ``args`` started in ``cwd`` with ``env``, the argument equal to
    ``fd_option`` given the descriptor of the peer's end of the socket pair (passed to
    it: ``--gpu-bench-peer=`` becomes ``--gpu-bench-peer=7``), its output in a file
    with no name until a message needs one (:attr:`log_name`); :attr:`conn` is this
    side's end of the connection.  ``OSError`` when it cannot start (nothing is left
    open then)."""

    def __init__(self, args: Sequence[str], fd_option: str, cwd: Path, env: dict[str, str],
                 log_prefix: str) -> None:
        # The peer's output goes to a file with no name: a lead killed outright (CI's
        # timeout, the OOM killer) cleans nothing up, and a named log of every peer it
        # had started stayed in the temporary folder for good.  The output gets a name
        # only when a message must point at it (:attr:`log_name`).
        self.log = tempfile.TemporaryFile(prefix=log_prefix, suffix=".log")  # noqa: SIM115
        self.log_prefix = log_prefix
        self._kept: str | None = None
        lead, peer = socket.socketpair()
        command = [f"{arg}{peer.fileno()}" if arg == fd_option else arg for arg in args]
        try:
            self.process = subprocess.Popen(command, cwd=cwd, env=env,
                                            stdout=self.log, stderr=subprocess.STDOUT,
                                            pass_fds=(peer.fileno(),))
        except OSError:
            lead.close()
            self.log.close()
            raise
        finally:
            peer.close()
        self.conn = Connection(lead.detach())

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log_name(self) -> str:
        """The path of a copy of the peer's output so far, written (again) on each use:
        for the message of a peer that failed, which keeps it for the user."""
        if self._kept is None:
            handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - kept for the user
                prefix=self.log_prefix, suffix=".log", delete=False)
            handle.close()
            self._kept = handle.name
        Path(self._kept).write_bytes(self._output())
        return self._kept

    def poll(self) -> int | None:
        """The return code once the peer has ended, else None."""
        return self.process.poll()

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def wait(self) -> int:
        """Wait for a peer that has ended or is ending (its connection is gone)."""
        return self.process.wait()

    def end(self, timeout: float) -> int | None:
        """Close the connection (the peer ends with it) and wait up to ``timeout``
        seconds; a peer still alive then is killed and None returned."""
        self.conn.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def last_line(self, lines: int) -> str:
        """The last non-empty line among the last ``lines`` of the peer's output."""
        tail = self._output().decode(errors="replace").splitlines()[-lines:]
        return next((line.strip() for line in reversed(tail) if line.strip()), "no output")

    def remove_log(self) -> None:
        """Close the output (a peer that ended well); its space goes with it."""
        self.log.close()

    def _output(self) -> bytes:
        """The peer's output so far.  ``pread``: the peer writes through the same open
        file, whose offset a ``seek`` here would move under its next write.  Nothing once
        :meth:`remove_log` has closed it."""
        if self.log.closed:
            return b""
        self.log.flush()
        fd = self.log.fileno()
        size = os.fstat(fd).st_size
        chunks, offset = [], 0
        while offset < size:
            chunk = os.pread(fd, min(size - offset, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
