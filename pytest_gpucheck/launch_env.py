"""Every environment variable that says how this process was launched, in one place.

Launchers and pytest-xdist describe a process only through its environment,
and the plugin must read that description *before* importing ``mpi4py``
(importing it initialises MPI) and before any framework creates a CUDA
context (the device choice depends on the node-local rank).  This module
owns those variables and reads them; it imports nothing beyond the standard
library, so the core, the MPI support and the probe children can all use it.

* **Global rank** (:func:`launched_rank`): Hydra (MPICH, Intel MPI) sets
  ``PMI_RANK``/``PMI_SIZE``, Open MPI ``OMPI_COMM_WORLD_*``, PMIx launchers
  ``PMIX_RANK``, MVAPICH ``MV2_COMM_WORLD_*``, and ``srun`` sets
  ``SLURM_STEP_ID`` with ``SLURM_PROCID``/``SLURM_NTASKS`` (a batch script alone
  has ``SLURM_PROCID`` but no step, so it does not count as a launch).
* **Node-local rank** (:func:`local_slot`): ``PYTEST_GPUCHECK_LOCAL_RANK``
  (exported by the MPI support from the shared-memory split of
  ``COMM_WORLD``), then the launchers' own variables, then the pytest-xdist
  worker number.
* **Leaving a job** (:func:`without_launcher`): the environment of a child
  that must start as a singleton MPI process rather than join its parent's job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

#: Set by the plugin in every rank to its own pid: a process that inherits it
#: with another pid is a *child* of a rank (e.g. a simulator child), not a rank.
RANK_PID_VARIABLE = "PYTEST_GPUCHECK_MPI_RANK_PID"

#: The node-local rank the MPI support computed (first of :data:`LOCAL_RANK_VARIABLES`).
LOCAL_RANK_VARIABLE = "PYTEST_GPUCHECK_LOCAL_RANK"

#: pytest-xdist's worker name (``gw3``) in each worker process.
XDIST_WORKER_VARIABLE = "PYTEST_XDIST_WORKER"

#: (rank variable, size variable, launcher family), most specific first.
LAUNCHER_RANK_VARIABLES: tuple[tuple[str, str, str], ...] = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"),
    ("PMI_RANK", "PMI_SIZE", "PMI (MPICH/Hydra, Intel MPI)"),
    ("PMIX_RANK", "PMIX_SIZE", "PMIx"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MVAPICH"),
)

#: Environment variables that carry the node-local rank, most specific first.
LOCAL_RANK_VARIABLES: tuple[str, ...] = (
    LOCAL_RANK_VARIABLE,
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "PMI_LOCAL_RANK",
    "PALS_LOCAL_RANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
)

#: Prefixes of the variables through which a launcher makes a process part of its job.
LAUNCHER_PREFIXES: tuple[str, ...] = (
    "PMI_", "PMIX_", "OMPI_", "MPI_LOCAL", "HYDRA_", "MV2_", "SLURM_",
)

#: The task count of the SLURM allocation (the ranks a launcher may start there).
SLURM_NTASKS_VARIABLE = "SLURM_NTASKS"


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
    for rank_variable, size_variable, launcher in LAUNCHER_RANK_VARIABLES:
        rank = env.get(rank_variable, "")
        if rank.isdigit():
            size = env.get(size_variable, "")
            return LaunchedRank(int(rank), int(size) if size.isdigit() else None, launcher)
    if env.get("SLURM_STEP_ID", "").isdigit() and env.get("SLURM_PROCID", "").isdigit():
        ntasks = env.get(SLURM_NTASKS_VARIABLE, env.get("SLURM_STEP_NUM_TASKS", ""))
        return LaunchedRank(
            int(env["SLURM_PROCID"]), int(ntasks) if ntasks.isdigit() else None, "SLURM srun"
        )
    return None


def claim_rank_environment() -> None:
    """Mark this process as the rank (so its children are not mistaken for ranks)."""
    os.environ[RANK_PID_VARIABLE] = str(os.getpid())


def local_slot(env: Mapping[str, str]) -> tuple[int, str]:
    """The device slot this process should take: node-local rank, xdist worker, or 0.

    >>> local_slot({"SLURM_LOCALID": "2", "PYTEST_XDIST_WORKER": "gw1"})
    (2, 'local rank 2 from SLURM_LOCALID')
    >>> local_slot({"PYTEST_XDIST_WORKER": "gw1"})
    (1, 'pytest-xdist worker gw1')
    """
    for variable in LOCAL_RANK_VARIABLES:
        value = env.get(variable, "")
        if value.isdigit():
            return int(value), f"local rank {value} from {variable}"
    worker = env.get(XDIST_WORKER_VARIABLE, "")
    if worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:]), f"pytest-xdist worker {worker}"
    return 0, "default"


def without_launcher(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a child that must not join this job.

    The launcher's variables are dropped, so the child starts as a singleton MPI
    process, and the rank marker is cleared, so it is not taken for a rank.

    >>> without_launcher({"PMI_RANK": "1", "PATH": "/bin"})
    {'PATH': '/bin', 'PYTEST_GPUCHECK_MPI_RANK_PID': ''}
    """
    env = os.environ if env is None else env
    child = {k: v for k, v in env.items() if not k.startswith(LAUNCHER_PREFIXES)}
    child[RANK_PID_VARIABLE] = ""
    return child
