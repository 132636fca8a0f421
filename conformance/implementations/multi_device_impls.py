"""Bundled multi-device implementations: data-parallel JAX with ``jax.shard_map``.

* ``sharded_sum``: the input is padded with zeros to a multiple of the device
  count, sharded over a 2-D mesh ``('x', 'y')`` (2 x D/2 devices when D is
  even and at least 4, else 1 x D), each device sums its shard and
  ``psum`` over *both* mesh axes combines the partial sums.
* ``sharded_heat_step_1d``: the field is sharded over a 1-D mesh ``'i'``;
  each device sends its first cell to its left neighbour and its last cell to
  its right neighbour with ``ppermute`` (the halo exchange), then updates its
  shard.  The domain walls (global cells 0 and n-1) stay 0.

The suites skip these cells with the reason when the backend has fewer than two
devices (see :mod:`pytest_gpucheck.multi_device`).  Frameworks without an
in-process data-parallel API are not applicable.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.backends.jax.compat import shard_map
from pytest_gpucheck.registry import implements

from ._applicability import not_applicable_elsewhere

KERNELS = ("sharded_sum", "sharded_heat_step_1d")
JAX = ("jax-cpu", "jax-gpu")


def jax_devices_of(array: Any) -> list[Any]:
    """All devices of the platform ``array`` lives on."""
    import jax

    (device,) = array.devices()
    return list(jax.devices(device.platform))


def mesh_2d(devices: list[Any]) -> Any:
    """A ``('x', 'y')`` mesh: 2 x D/2 when D is even and >= 4, else 1 x D."""
    from jax.sharding import Mesh

    count = len(devices)
    rows = 2 if count >= 4 and count % 2 == 0 else 1
    return Mesh(np.array(devices).reshape(rows, count // rows), ("x", "y"))


def _padded(x: Any, count: int) -> Any:
    import jax.numpy as jnp

    pad = (-x.shape[0]) % count
    return jnp.concatenate([x, jnp.zeros(pad, x.dtype)]) if pad else x


@functools.cache
def _sharded_sum(devices: tuple[Any, ...]) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    mesh = mesh_2d(list(devices))

    def local(block: Any) -> Any:
        return jax.lax.psum(jnp.sum(block, dtype=block.dtype), ("x", "y")).reshape(1)

    return jax.jit(shard_map(local, mesh=mesh, in_specs=P(("x", "y")), out_specs=P()))


def jax_sharded_sum(x: Any) -> Any:
    """Sum over shards on every device of the platform, combined with ``psum``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax_devices_of(x)
    # Place the shards on their devices (the input arrives on one device).
    sharded = jax.device_put(_padded(x, len(devices)),
                             NamedSharding(mesh_2d(devices), P(("x", "y"))))
    return _sharded_sum(tuple(devices))(sharded)


def halo_shifts(count: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``ppermute`` pairs: to the right neighbour (i -> i+1) and to the left (i -> i-1),
    non-periodic (the end devices receive zeros)."""
    return [(i, i + 1) for i in range(count - 1)], [(i + 1, i) for i in range(count - 1)]


@functools.cache
def _sharded_heat(devices: tuple[Any, ...], n: int) -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    count = len(devices)
    mesh = Mesh(np.array(devices), ("i",))
    to_right, to_left = halo_shifts(count)

    def local(block: Any, index: Any, alpha: Any) -> Any:
        # The left ghost is the left neighbour's last cell, sent rightwards; the right
        # ghost is the right neighbour's first cell, sent leftwards.
        left = jax.lax.ppermute(block[-1:], "i", to_right)
        right = jax.lax.ppermute(block[:1], "i", to_left)
        extended = jnp.concatenate([left, block, right])
        centre = extended[1:-1]
        update = centre + alpha * (extended[:-2] - 2 * centre + extended[2:])
        interior = (index > 0) & (index < n - 1)
        return jnp.where(interior, update, jnp.zeros_like(update))

    return jax.jit(shard_map(local, mesh=mesh, in_specs=(P("i"), P("i"), P()),
                             out_specs=P("i")))


def jax_sharded_heat_step_1d(u: Any, alpha: Any) -> Any:
    """One heat step with ``u`` sharded over every device and a ``ppermute`` halo exchange."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    devices = jax_devices_of(u)
    n = int(u.shape[0])
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    shards = NamedSharding(Mesh(np.array(devices), ("i",)), P("i"))
    padded = jax.device_put(_padded(u, len(devices)), shards)
    index = jax.device_put(jnp.arange(padded.shape[0]), shards)
    out = _sharded_heat(tuple(devices), n)(padded, index, jnp.asarray(alpha, u.dtype))
    # Back on the input's device, as the single-device kernel returns it.
    return jax.device_put(out[:n], next(iter(u.devices())))


for _backend in JAX:
    implements("sharded_sum", backend=_backend, name="shard-map-psum",
               origin="bundled")(jax_sharded_sum)
    implements("sharded_heat_step_1d", backend=_backend, name="shard-map-ppermute",
               origin="bundled")(jax_sharded_heat_step_1d)

_ONE_DEVICE = "{what}: one process, one device; no collectives across devices to check"
not_applicable_elsewhere(
    KERNELS, JAX,
    {"numpy": _ONE_DEVICE.format(what="NumPy runs on the host"),
     "numba-cpu": _ONE_DEVICE.format(what="Numba's CPU target runs on the host"),
     "numba-cudasim": _ONE_DEVICE.format(what="the CUDA simulator presents one device"),
     "torch-cpu": _ONE_DEVICE.format(what="torch on the CPU runs on the host"),
     "numba-cuda": "Numba has no in-process collectives across GPUs; use MPI (the mpi suites)",
     "cupy": "CuPy has no in-process collectives across GPUs (peer copies are not yet "
             "covered); use MPI (the mpi suites)",
     "torch-cuda": "torch's collectives across GPUs run one process per GPU "
                   "(torch.distributed); use MPI (the mpi suites)",
     "cuda-python": "cuda.core has no collectives across GPUs"},
    "no in-process data-parallel API")

__all__ = ["KERNELS", "halo_shifts", "jax_devices_of", "mesh_2d"]
