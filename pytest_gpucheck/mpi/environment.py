"""Is this process an MPI rank started by a launcher?  Answered from the environment only.

Importing ``mpi4py`` initialises MPI, so the plugin must know *before* importing
it whether a launcher started this process.  Launchers say so through their
environment: Hydra (MPICH, Intel MPI) sets ``PMI_RANK``/``PMI_SIZE``, Open MPI
``OMPI_COMM_WORLD_*``, PMIx launchers ``PMIX_RANK``, and ``srun`` sets
``SLURM_STEP_ID`` with ``SLURM_PROCID``/``SLURM_NTASKS`` (a batch script alone
has ``SLURM_PROCID`` but no step, so it does not count as a launch).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

#: Set by the plugin in every rank to its own pid: a process that inherits it
#: with another pid is a *child* of a rank (e.g. a simulator child), not a rank.
RANK_PID_VARIABLE = "PYTEST_GPUCHECK_MPI_RANK_PID"

# (rank variable, size variable, launcher family), most specific first.
_LAUNCHER_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"),
    ("PMI_RANK", "PMI_SIZE", "PMI (MPICH/Hydra, Intel MPI)"),
    ("PMIX_RANK", "PMIX_SIZE", "PMIx"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MVAPICH"),
)


@dataclass(frozen=True)
class LaunchedRank:
    """This process's place in a launched job, as the launcher's environment says."""

    rank: int
    size: int | None
    launcher: str


def launched_rank(
    env: Mapping[str, str] | None = None, pid: int | None = None
) -> LaunchedRank | None:
    """The rank this process was started as, or None when no launcher started it.

    >>> launched_rank({"PMI_RANK": "1", "PMI_SIZE": "2"}).size
    2
    >>> launched_rank({"SLURM_PROCID": "0"}) is None  # a batch script, not an srun step
    True
    """
    env = os.environ if env is None else env
    pid = os.getpid() if pid is None else pid
    owner = env.get(RANK_PID_VARIABLE, "")
    if owner and owner != str(pid):
        return None  # inherited from an ancestor rank: this is a helper process of a rank
    for rank_variable, size_variable, launcher in _LAUNCHER_VARIABLES:
        rank = env.get(rank_variable, "")
        if rank.isdigit():
            size = env.get(size_variable, "")
            return LaunchedRank(int(rank), int(size) if size.isdigit() else None, launcher)
    if env.get("SLURM_STEP_ID", "").isdigit() and env.get("SLURM_PROCID", "").isdigit():
        ntasks = env.get("SLURM_NTASKS", env.get("SLURM_STEP_NUM_TASKS", ""))
        return LaunchedRank(
            int(env["SLURM_PROCID"]), int(ntasks) if ntasks.isdigit() else None, "SLURM srun"
        )
    return None


def claim_rank_environment() -> None:
    """Mark this process as the rank (so its children are not mistaken for ranks)."""
    os.environ[RANK_PID_VARIABLE] = str(os.getpid())
