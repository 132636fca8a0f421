"""Every environment variable of the plugin's processes, in one place: how this process
was launched, and what the plugin tells the children it starts.

It imports nothing beyond the standard library, so every layer can use it: the core,
the backends (the simulator child, JAX's host devices), the MPI support, the process
layer and the probe children.  Reading a variable costs nothing when a run starts no
child.

**How this process was launched.**  Launchers and pytest-xdist describe a process only
through its environment, and the plugin must read that description *before* importing
``mpi4py`` (importing it initialises MPI) and before any framework creates a CUDA
context (the device choice depends on the node-local rank).

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

**What the plugin tells its children** (the second half of this module): where to write
their reports, which parent to outlive no longer, the simulator child, the sanitizer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
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


# -- what the plugin tells the children it starts ----------------------------------------

#: Directory a child writes its serialized reports into (one file per rank).
REPORT_SINK_VARIABLE = "PYTEST_GPUCHECK_REPORT_SINK"
#: Set in the child that runs the simulator items.
SIMULATOR_CHILD_VARIABLE = "PYTEST_GPUCHECK_SIMULATOR_CHILD"
#: ``<pid>@<host>`` of the pytest that started the child: the child ends its
#: process tree when that process is gone.
PARENT_VARIABLE = "PYTEST_GPUCHECK_PARENT"
#: ``<requests fd>,<replies fd>``: set in a long-lived worker, which serves the items
#: its parent names one at a time (:mod:`pytest_gpucheck.processes.pool`).
SERVE_VARIABLE = "PYTEST_GPUCHECK_SERVE"
#: JSON list of the ``conftest.py`` paths the parent loaded; the child loads them too.
CONFTESTS_VARIABLE = "PYTEST_GPUCHECK_CONFTESTS"
#: Set in a worker started under compute-sanitizer (``--gpu-sanitize``): its
#: ``--log-file``, which the worker reads after each test, and the tool.
SANITIZE_LOG_VARIABLE = "PYTEST_GPUCHECK_SANITIZE_LOG"
SANITIZE_TOOL_VARIABLE = "PYTEST_GPUCHECK_SANITIZE_TOOL"
#: ``<stdout fd>,<stderr fd>``: under the parent's ``-s``, the child writes what its
#: tests print to these (the parent's own terminal), live
#: (:class:`~pytest_gpucheck.processes.worker.OutputStream`).
STREAM_VARIABLE = "PYTEST_GPUCHECK_STREAM"
#: JSON: what the command the user typed contributes to a failure's ``rerun:`` line (the
#: folder it ran in, the paths it named, the suites ``--gpu-conformance`` added, the options
#: that change the draws or the outcome), set by the process the user started for every
#: process under it (xdist workers, isolation workers, the simulator child, MPI ranks), so
#: a line printed anywhere reruns from the user's folder
#: (:func:`pytest_gpucheck.reporting.ci.rerun_invocation`).
RERUN_VARIABLE = "PYTEST_GPUCHECK_RERUN"
#: The parent's ``junit_family`` when it writes a junit file (``--junitxml``): the child
#: then keeps ``record_testsuite_property``'s properties for it (and warns as pytest does).
JUNIT_VARIABLE = "PYTEST_GPUCHECK_JUNIT_FAMILY"

#: JAX's GPU client reserves 75% of each GPU it initializes at its first operation
#: (``XLA_PYTHON_CLIENT_PREALLOCATE``), and it initializes every platform at once,
#: even for a CPU-only computation.  The plugin runs JAX beside numba-cuda, CuPy,
#: cuda-python and PyTorch in one process, several MPI ranks or xdist workers on
#: one GPU, and probe children that need a context of their own: with preallocation
#: the frameworks after the first JAX test run out of memory.  So JAX allocates on
#: demand (its caching allocator keeps what it used, which is what a test needs).
#: The option that sets how many CPU devices JAX presents, and the XLA flag it sets (read by
#: JAX only at start-up, so before any child process starts).
HOST_DEVICES_OPTION = "--gpu-host-devices"
XLA_FLAG = "--xla_force_host_platform_device_count"

JAX_MEMORY_POLICY = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
#: The preallocated fraction (jaxlib's xla_client reads both; the second is deprecated).
JAX_FRACTION_VARIABLES = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")


def apply_jax_memory_policy(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the JAX allocator variables the user has not set; return what was set.

    Must run before JAX creates its GPU client (its first operation) in this
    process; children the plugin starts later inherit the variables.  A value
    the user chose (``XLA_PYTHON_CLIENT_PREALLOCATE=true``, a memory fraction) is kept.
    """
    env = os.environ if environ is None else environ
    if any(key in env for key in JAX_FRACTION_VARIABLES):
        return {}  # the user sized the preallocation: respect it
    applied = {key: value for key, value in JAX_MEMORY_POLICY.items() if key not in env}
    env.update(applied)
    return applied
