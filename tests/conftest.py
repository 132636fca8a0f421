"""Shared setup for the plugin's own tests."""

from __future__ import annotations

import contextlib

pytest_plugins = ["pytester"]

# pytester's in-process runs drop modules first imported during the run, and
# extension modules such as NumPy's cannot be imported twice in one process:
# import the frameworks the CPU tier probes once, up front.
for _module in ("numpy", "torch", "jax", "jax.numpy", "numba"):
    with contextlib.suppress(ImportError):
        __import__(_module)
