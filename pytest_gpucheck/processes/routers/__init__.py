"""Routers: parent-side plugins that send some items to child processes of one kind, and
the one dispatcher that asks them in order (:mod:`pytest_gpucheck.processes.routers.base`)."""

from __future__ import annotations

import pytest


def configure_routers(config: pytest.Config) -> None:
    """Register the dispatcher and the core's routers: the isolation router (unless
    ``--gpu-isolate=none`` or a launched rank) and, when ``numba-cudasim`` is selected
    outside its own child, the simulator router.  A feature registers its own router
    when it knows it needs one (the sanitizer's at session start, MPI's at collection)."""
    from pytest_gpucheck.processes.routers.base import register_dispatcher
    from pytest_gpucheck.processes.routers.isolation import configure_isolation
    from pytest_gpucheck.selection import get_selection

    register_dispatcher(config)
    configure_isolation(config)
    selection = get_selection(config)
    if "numba-cudasim" in selection.names and not selection.in_simulator_child:
        from pytest_gpucheck.processes.routers.simulator import SimulatorRouter

        config.pluginmanager.register(SimulatorRouter(config), "gpucheck-simulator-router")
