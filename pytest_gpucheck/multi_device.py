"""Several devices in one process: the ``gpu_devices`` fixture, and JAX host devices.

JAX presents one CPU device unless ``XLA_FLAGS`` holds
``--xla_force_host_platform_device_count=N`` when JAX starts.  So that the
multi-device suites run on the CPU tier for real, this feature adds that flag
to ``XLA_FLAGS`` in ``pytest_configure`` (before the core probes any backend)
when ``jax-cpu`` is selected and JAX is not imported yet; children started
later (the simulator child, MPI ranks) inherit it.  A test that needs more
devices than the backend has is skipped with the reason, which names the way
to get them.  ``--gpu-host-devices=0`` leaves ``XLA_FLAGS`` alone.

The flag only adds host devices: arrays still go to the first device unless a
computation shards them, so other JAX tests are unaffected.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from .backends import BACKENDS, backend_class
from .child_env import HOST_DEVICES_OPTION, XLA_FLAG

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


def _jax_cpu_selected(config: pytest.Config) -> bool:
    from .options import BACKENDS_INI, parse_backend_spec

    text = config.getoption("gpu_backends") or str(config.getini(BACKENDS_INI))
    try:
        return "jax-cpu" in parse_backend_spec(text).names
    except pytest.UsageError:
        return False  # the core reports the bad value


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    count = host_devices(config)
    if count == 0 or "jax" in sys.modules or not _jax_cpu_selected(config):
        return
    flags = os.environ.get("XLA_FLAGS")
    if flags is not None and XLA_FLAG in flags:
        return  # the user's own choice wins
    config.stash[_ORIGINAL_XLA_FLAGS] = (True, flags)
    os.environ["XLA_FLAGS"] = f"{flags} {XLA_FLAG}={count}" if flags else f"{XLA_FLAG}={count}"


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
