"""Several devices in one process: the ``gpu_devices`` fixture, and JAX host devices.

JAX presents one CPU device unless ``XLA_FLAGS`` holds
``--xla_force_host_platform_device_count=N`` when its backends start, and the
count holds for the whole process.  So that the multi-device suites run on the
CPU tier for real without changing a project's own JAX tests, this feature adds
that flag only when collection finds a selected item that needs several
``jax-cpu`` devices (``@pytest.mark.gpu_devices(n)`` or the ``gpu_devices``
fixture), and JAX has not started yet; a run without such an item leaves
``XLA_FLAGS`` as it was.  Where the flag is set, it holds for the whole run
(JAX cannot scope it), and one line says so.  With ``jax-gpu`` selected, its
probe starts JAX before collection, so the flag is set at configure instead,
and the header says so.  Children started later inherit it.  A test that needs
more devices than the backend has is skipped with the reason, which names the
way to get them.  ``--gpu-host-devices=0`` leaves ``XLA_FLAGS`` alone.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from pytest_gpucheck.backends import BACKENDS, backend_class
from pytest_gpucheck.environment import HOST_DEVICES_OPTION, XLA_FLAG

DEFAULT_HOST_DEVICES = 4
MARKER = ("gpu_devices(n): the test needs at least n devices of its backend (default 2); "
          "the gpu_devices fixture gives them, or the test is skipped with the reason.")
_ORIGINAL_XLA_FLAGS = pytest.StashKey[tuple[bool, str | None]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpucheck")
    group.addoption(
        HOST_DEVICES_OPTION, dest="gpu_host_devices", default=str(DEFAULT_HOST_DEVICES),
        metavar="N",
        help=f"JAX CPU devices to present when jax-cpu is selected (XLA_FLAGS={XLA_FLAG}=N, "
             f"set before JAX starts), for the multi-device suites. 0: leave XLA_FLAGS alone. "
             f"Default {DEFAULT_HOST_DEVICES}.")


def host_devices(config: pytest.Config) -> int:
    """The validated ``--gpu-host-devices`` value (a usage error names the fix)."""
    text = str(config.getoption("gpu_host_devices"))
    if not text.isdigit():
        # One message for '-1', '2.5' and 'four': what is accepted, not what '-1' is not.
        raise pytest.UsageError(f"{HOST_DEVICES_OPTION}={text!r}: the device count must be a "
                                f"whole number >= 1, e.g. {HOST_DEVICES_OPTION}=4, or 0 to "
                                "leave XLA_FLAGS alone")
    return int(text)


#: The line that says what the run changed for every test in it, and why (None: nothing).
_WHOLE_RUN_NOTE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    count = host_devices(config)
    from pytest_gpucheck.options import selected_names

    names = selected_names(config)
    if count and "jax-cpu" in names and "jax-gpu" in names:
        # jax-gpu's probe starts JAX's backends before collection: decide now.
        _add_host_devices(config, count, "jax-gpu's probe starts JAX before collection, so "
                                         "jax-cpu's multi-device items get them this way")


def pytest_report_header(config: pytest.Config) -> list[str]:
    note = config.stash.get(_WHOLE_RUN_NOTE, None)
    return [note] if note else []


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After deselection: set the host-device count when a selected item needs it."""
    count = host_devices(config)
    if not count or _ORIGINAL_XLA_FLAGS in config.stash:
        return
    needing = [item for item in items if needs_host_devices(item)]
    if not needing or _jax_started():
        return  # nothing needs them, or too late: those items skip with the reason
    if _add_host_devices(config, count, f"{len(needing)} selected item(s) need several "
                                        "jax-cpu devices"):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(config, "workerinput"):
            from pytest_gpucheck.reporting.terminal_width import fit, terminal_width

            reporter.write_line(fit(config.stash[_WHOLE_RUN_NOTE], terminal_width(config)))


def needs_host_devices(item: pytest.Item) -> bool:
    """An item on ``jax-cpu`` that asks for several devices (marker or fixture), not skipped."""
    from pytest_gpucheck.selection import item_backends

    wants = (item.get_closest_marker("gpu_devices") is not None
             or "gpu_devices" in getattr(item, "fixturenames", ()))
    return (wants and "jax-cpu" in item_backends(item)
            and item.get_closest_marker("skip") is None)


def _jax_started() -> bool:
    """Whether JAX's backends have started in this process (they read XLA_FLAGS then)."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge
    except ImportError:
        return True  # cannot tell: assume the worst, leave XLA_FLAGS alone
    started = getattr(xla_bridge, "backends_are_initialized", None)
    return bool(started()) if started is not None else bool(getattr(xla_bridge, "_backends", 1))


def _add_host_devices(config: pytest.Config, count: int, why: str) -> bool:
    """Add the flag to ``XLA_FLAGS`` for the rest of the run; False where the user set it."""
    flags = os.environ.get("XLA_FLAGS")
    if flags is not None and XLA_FLAG in flags:
        return False  # the user's own choice wins
    config.stash[_ORIGINAL_XLA_FLAGS] = (True, flags)
    os.environ["XLA_FLAGS"] = f"{flags} {XLA_FLAG}={count}" if flags else f"{XLA_FLAG}={count}"
    config.stash[_WHOLE_RUN_NOTE] = (
        f"gpucheck: XLA_FLAGS gets {XLA_FLAG}={count} for the whole run ({why}; JAX reads it "
        f"once per process; {HOST_DEVICES_OPTION}=0 leaves XLA_FLAGS alone)")
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    # JAX keeps what it read at start-up; the environment goes back as it was.
    changed, flags = config.stash.get(_ORIGINAL_XLA_FLAGS, (False, None))
    if not changed:
        return
    if flags is None:
        os.environ.pop("XLA_FLAGS", None)
    else:
        os.environ["XLA_FLAGS"] = flags


# -- devices of a backend ----------------------------------------------------------------------


def devices_of(backend_name: str) -> list[Any]:
    """Every device of ``backend_name`` this process can use, as the framework names them.

    Host backends have one device (the host).  The framework is imported.
    """
    if backend_name not in BACKENDS:
        raise ValueError(f"unknown backend {backend_name!r}; valid backends: "
                         f"{', '.join(BACKENDS)}")
    return backend_class(backend_name)().devices()


def too_few_devices(backend_name: str, needed: int) -> str | None:
    """Why ``backend_name`` cannot give ``needed`` devices here, or None when it can."""
    found = len(devices_of(backend_name))
    if found >= needed:
        return None
    reason = backend_class(backend_name)().fewer_devices_reason()
    return f"needs {needed} devices of {backend_name}, found {found}: {reason}"


def skip_unless_devices(backend_name: str, needed: int = 2) -> None:
    """Skip the calling test, with the reason, unless ``backend_name`` has ``needed`` devices."""
    reason = too_few_devices(backend_name, needed)
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def gpu_devices(gpu_backend: Any, request: pytest.FixtureRequest) -> list[Any]:
    """At least ``n`` devices of the test's backend (``@pytest.mark.gpu_devices(n)``, default 2),
    as the framework names them (``jax.Device``, ``torch.device``, ``cupy.cuda.Device``);
    the test is skipped with the reason when fewer exist."""
    marker = request.node.get_closest_marker("gpu_devices")
    needed = int(marker.args[0]) if marker is not None and marker.args else 2
    skip_unless_devices(gpu_backend.name, needed)
    return devices_of(gpu_backend.name)


__all__ = ["devices_of", "gpu_devices", "host_devices", "skip_unless_devices",
           "too_few_devices"]
