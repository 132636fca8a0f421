"""Short commands the plugin asks a question of and waits for: the report's
``git rev-parse HEAD``, the sanitizer's ``compute-sanitizer --version``.

One call, :func:`run_command`: the command runs to its end or is killed at its
timeout (``subprocess.run`` kills and reaps it), so none outlives the call that
started it; its output is read here, whole.  A command that cannot start or does
not end in time is no exception for the caller but the reason, one line, that the
caller words for its user.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CommandOutput:
    """What a short command that ran to its end left: its exit code and its output."""

    returncode: int
    stdout: str
    stderr: str


def run_command(args: Sequence[str], *, timeout: float,
                cwd: Path | None = None) -> CommandOutput | str:
    """Run ``args`` (in ``cwd``) to its end and return its exit code and output (text),
    or why it did not run to its end: the ``OSError`` that kept it from starting or the
    timeout it was killed at (``str`` of the exception, as the caller's line shows it)."""
    try:
        done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return CommandOutput(done.returncode, done.stdout, done.stderr)
