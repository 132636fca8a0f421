"""JAX across processes under the MPI launcher: ``jax.distributed.initialize`` on every rank,
then a cross-process ``psum`` checked against the global sum.

``jax.distributed.initialize`` must run before JAX initialises its backends, so
it cannot run inside a pytest session that has already used JAX.  The check
therefore launches its own job, ``mpiexec -n N python -m
pytest_gpucheck.mpi.jax_processes``: rank 0 picks a free port for the
coordinator and broadcasts it over MPI, every rank initialises JAX
(CPU collectives through gloo), holds its block of a global integer-valued
array on its local devices, and the implementation reduces across every
device of every process.  Each rank prints one verdict line; the parent reads
them all.  A rank that dies, hangs past the limit or prints no verdict fails
the check (the whole job's process group is killed at the limit).

Run ``python -m pytest_gpucheck.mpi.jax_processes --help`` for the options;
``--impl module:function`` checks your own reduction (called as
``function(global_array, mesh)``, where ``global_array`` is sharded over the
mesh axis ``"p"`` that spans every process's devices).
"""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

VERDICT = "gpucheck-jax-processes:"


def cross_process_psum(array: Any, mesh: Any) -> Any:
    """The bundled reduction: per-device sums combined with ``psum`` over axis ``"p"``."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    from pytest_gpucheck.backends.jax.compat import shard_map

    def local(block: Any) -> Any:
        return jax.lax.psum(jnp.sum(block, dtype=block.dtype), "p")

    return jax.jit(shard_map(local, mesh=mesh, in_specs=P("p"), out_specs=P()))(array)


def _load(spec: str) -> Callable[[Any, Any], Any]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def rank_main(argv: list[str] | None = None) -> int:
    """One rank of the job (run under ``mpiexec``)."""
    parser = argparse.ArgumentParser(prog="python -m pytest_gpucheck.mpi.jax_processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-device", type=int, default=5,
                        help="elements of the global array per device")
    parser.add_argument("--impl", default=f"{__name__}:cross_process_psum",
                        help="module:function reducing (global_array, mesh) to the global sum")
    args = parser.parse_args(argv)

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    port = None
    if rank == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    port = comm.bcast(port, root=0)

    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=size,
                               process_id=rank)
    try:
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        devices = jax.devices()
        local_count = len(jax.local_devices())
        rng = np.random.default_rng(args.seed)
        whole = rng.integers(-1000, 1000, len(devices) * args.per_device).astype(np.int64)
        mesh = Mesh(np.array(devices), ("p",))
        # Devices are ordered by process: this rank holds the blocks of its own devices.
        start = rank * local_count * args.per_device
        mine = whole[start:start + local_count * args.per_device]
        array = jax.make_array_from_process_local_data(NamedSharding(mesh, P("p")), mine)
        result = _load(args.impl)(array, mesh)
        got = np.asarray(result.addressable_data(0)).reshape(-1)
        expected = int(whole.sum())
        ok = got.size == 1 and int(got[0]) == expected
        what = (f"rank {rank} of {size} ({local_count} local of {len(devices)} devices): "
                f"sum {got.tolist()}, expected {expected}")
        # One write per verdict line: print() writes the text and its newline separately
        # when stdout is unbuffered (PYTHONUNBUFFERED), and mpiexec then interleaves the
        # ranks' lines ("...expected -2243gpucheck-jax-processes: ok rank 1 ...\n\n"), so
        # the parent found one verdict where two were printed.
        sys.stdout.write(f"{VERDICT} {'ok' if ok else 'wrong'} {what}\n")
        sys.stdout.flush()
        return 0 if ok else 1
    finally:
        jax.distributed.shutdown()


@dataclass(frozen=True)
class JobResult:
    """The verdict lines of every rank and what the job printed."""

    returncode: int
    verdicts: list[str]
    output: str
    #: Ended at its timeout: never a pass, whatever the ranks printed before and
    #: however the launcher exits when asked to end (SIGTERM, then SIGKILL).
    killed: bool = False

    def problem(self, ranks: int) -> str | None:
        """Why the job does not show a correct cross-process sum on every rank, or None."""
        wrong = [line for line in self.verdicts if not line.startswith("ok ")]
        if wrong:
            return "\n".join(wrong)
        if self.killed:
            return (f"the job did not end within its timeout and was ended (exit code "
                    f"{self.returncode}):\n{self.output[-3000:]}")
        if len(self.verdicts) != ranks:
            return (f"{len(self.verdicts)} of {ranks} ranks reported a verdict (exit code "
                    f"{self.returncode}):\n{self.output[-3000:]}")
        if self.returncode != 0:
            return f"the job exited with code {self.returncode}:\n{self.output[-3000:]}"
        return None


def run_job(mpiexec: str, ranks: int, *, seed: int = 0, impl: str | None = None,
            timeout: float = 120.0, env: dict[str, str] | None = None) -> JobResult:
    """Launch the job; kill its whole process group if it outlives ``timeout`` seconds."""
    command = [mpiexec, "-n", str(ranks), sys.executable, "-m", __name__, "--seed", str(seed)]
    if impl is not None:
        command += ["--impl", impl]
    from pytest_gpucheck.processes import run_process_group

    returncode, output, killed = run_process_group(command, timeout=timeout, env=env)
    if killed:
        output += f"\n(ended after {timeout:g} s)"
    verdicts = [line.split(VERDICT, 1)[1].strip() for line in output.splitlines()
                if VERDICT in line]
    return JobResult(returncode, verdicts, output, killed)


if __name__ == "__main__":
    sys.exit(rank_main())
