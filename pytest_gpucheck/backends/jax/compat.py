"""What differs between the JAX releases the plugin supports (``jax>=0.5.1``).

Nothing here imports JAX before it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def shard_map(f: Callable[..., Any], *, mesh: Any, in_specs: Any, out_specs: Any) -> Any:
    """``jax.shard_map(f, mesh=..., in_specs=..., out_specs=...)``.

    JAX 0.5.1, the lowest release declared, has it only as
    ``jax.experimental.shard_map.shard_map`` (same arguments); newer releases
    make it ``jax.shard_map`` and drop the experimental module."""
    import jax

    public: Any = getattr(jax, "shard_map", None)
    if public is None:
        from jax.experimental import shard_map as experimental

        public = experimental.shard_map
    return public(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


def major_to_minor(array: Any) -> tuple[int, ...] | None:
    """The axes of ``array``'s XLA layout from major to minor (None: no layout to read).

    An imported Fortran-ordered or transposed DLPack array keeps its order in this
    layout.  Newer releases read it as ``array.format.layout``; earlier ones, JAX 0.5.1
    (the lowest declared) among them, as ``array.layout.device_local_layout``."""
    layout = getattr(getattr(array, "format", None), "layout", None)
    if layout is None:
        layout = getattr(getattr(array, "layout", None), "device_local_layout", None)
    order = getattr(layout, "major_to_minor", None)
    return tuple(order) if order is not None else None
