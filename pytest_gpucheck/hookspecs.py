"""Hooks through which feature plugins extend the core.

The core (``plugin.py``, :mod:`pytest_gpucheck.workers`) never names a
feature's options: each feature plugin (``bench``, ``mpi``, ...) implements
these hooks.  They are registered with ``config.pluginmanager.add_hookspecs``
when the plugin loads, so a conftest or a third-party plugin can implement
them too.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_gpucheck_child_args(config: pytest.Config) -> list[str]:
    """Command-line arguments a child pytest needs to run this session's items as here.

    Called by the parent each time it starts a child (the simulator child, a
    spawned MPI job, an isolation worker).  Return ``--option=value`` strings
    for the options of your feature that the user set, so the child collects
    and runs the same items the same way (an empty list when none is set);
    every implementation's list is added to the child's command line.  A
    feature whose work is done in the parent (a gate over all results) need
    not forward that part.
    """
    return []  # a specification: pluggy calls the implementations, never this body
