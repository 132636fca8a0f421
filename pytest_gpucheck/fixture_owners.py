"""Whose fixture an item gets: a project's own fixture may carry one of the plugin's names.

A project that merely has the plugin installed may define a fixture named ``mpi_comm``
(or ``gpu_device``) of its own; pytest gives its tests the project's fixture, and the
plugin must not take those tests for its own (its end-of-run output, its MPI rank
session).  A fixture of the project's that requests the plugin's under the same name
(pytest's way of extending a fixture) still gets the plugin's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

#: The package whose fixtures are the plugin's.
PLUGIN_PACKAGE = "pytest_gpucheck"


def _is_plugins(definition: Any) -> bool:
    module = str(getattr(getattr(definition, "func", None), "__module__", "") or "")
    return module == PLUGIN_PACKAGE or module.startswith(PLUGIN_PACKAGE + ".")


def gets_plugin_fixture(item: pytest.Item, names: Iterable[str]) -> bool:
    """Whether ``item`` gets one of ``names`` from the plugin (directly or through a
    fixture of the project that extends the plugin's under the same name)."""
    wanted = set(names).intersection(getattr(item, "fixturenames", ()))
    if not wanted:
        return False
    # pytest's resolved definitions of the item's fixtures, the closest one last.
    info = getattr(item, "_fixtureinfo", None)
    resolved = getattr(info, "name2fixturedefs", None)
    if resolved is None:
        return True  # an item of another kind: the name is all there is to go by
    for name in wanted:
        for definition in reversed(resolved.get(name, ())):
            if _is_plugins(definition):
                return True
            if name not in getattr(definition, "argnames", ()):
                break  # the project's own, which does not extend the plugin's
    return False
