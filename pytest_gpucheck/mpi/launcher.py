"""The command that starts N ranks (``mpiexec -n N``, ``srun -n N``, ...) and how many it can give.

``--gpu-mpi-launcher`` is a command line; ``{n}`` in it is replaced by the rank
count, otherwise ``-n N`` is appended (every common launcher accepts it).  A
bare launcher name is looked up on ``PATH`` and then next to the running
Python, where the ``mpich`` wheel installs ``mpiexec`` in a virtual environment
that is not activated.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from pytest_gpucheck.environment import SLURM_NTASKS_VARIABLE

DEFAULT_LAUNCHER = "mpiexec"


@dataclass(frozen=True)
class Launcher:
    """A launcher command template and the most ranks it may start here."""

    template: tuple[str, ...]
    max_ranks: int

    def command(self, ranks: int) -> list[str]:
        """The argument prefix that starts ``ranks`` ranks."""
        if any("{n}" in part for part in self.template):
            return [part.replace("{n}", str(ranks)) for part in self.template]
        return [*self.template, "-n", str(ranks)]

    def describe(self, ranks: int) -> str:
        return shlex.join(self.command(ranks))


class LauncherError(ValueError):
    """A launcher option that cannot work; the message names the fix."""


def find_executable(name: str) -> str | None:
    """``name`` on PATH, or next to this Python (an unactivated virtual environment)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def parse_launcher(text: str, max_ranks: int | None, env: dict[str, str] | None = None) -> Launcher:
    """Split and resolve ``--gpu-mpi-launcher``; raise :class:`LauncherError` if empty."""
    parts = shlex.split(text)
    if not parts:
        raise LauncherError("--gpu-mpi-launcher is empty; use e.g. --gpu-mpi-launcher=mpiexec")
    resolved = find_executable(parts[0])
    if resolved is not None:
        parts[0] = resolved
    return Launcher(tuple(parts), max_ranks if max_ranks else default_max_ranks(env))


def default_max_ranks(env: dict[str, str] | None = None) -> int:
    """Ranks available: the SLURM allocation's task count, else this machine's cores."""
    env = dict(os.environ) if env is None else env
    ntasks = env.get(SLURM_NTASKS_VARIABLE, "")
    if ntasks.isdigit():
        return int(ntasks)
    return os.cpu_count() or 1


def missing_launcher_reason(launcher: Launcher) -> str | None:
    """Why spawned MPI tests cannot run (no launcher, no mpi4py), or None."""
    import importlib.util

    if find_executable(launcher.template[0]) is None:
        return (
            f"MPI launcher {launcher.template[0]!r} not found; install one with "
            f"pip install 'pytest-gpucheck[mpi]' or set --gpu-mpi-launcher"
        )
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed; install it with pip install 'pytest-gpucheck[mpi]'"
    return None
