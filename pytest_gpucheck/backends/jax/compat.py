"""What differs between the JAX releases the plugin supports (``jax>=0.4.30``).

Nothing here imports JAX before it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def shard_map(f: Callable[..., Any], *, mesh: Any, in_specs: Any, out_specs: Any) -> Any:
    """``jax.shard_map(f, mesh=..., in_specs=..., out_specs=...)``.

    JAX 0.4.30, the lowest release declared, has it only as
    ``jax.experimental.shard_map.shard_map`` (same arguments); newer releases
    make it ``jax.shard_map`` and drop the experimental module."""
    import jax

    public: Any = getattr(jax, "shard_map", None)
    if public is None:
        from jax.experimental import shard_map as experimental

        public = experimental.shard_map
    return public(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
