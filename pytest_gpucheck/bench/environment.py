"""What a benchmark record says about where it ran.

A baseline is only comparable with a run on the same device model and backend
measured the same way; the record keeps those facts plus the versions that
explain a change (driver, runtime, framework).
"""

from __future__ import annotations

import platform
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend


@dataclass(frozen=True)
class Environment:
    """Device and software a benchmark ran on."""

    device_model: str
    compute_capability: str
    driver_version: str
    runtime_version: str
    backend: str
    framework_version: str
    python_version: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    @property
    def device_slug(self) -> str:
        """The device model as a folder name (``NVIDIA-H100-80GB-HBM3``)."""
        return slugify(self.device_model)


def slugify(text: str) -> str:
    """Letters, digits, dots, dashes and underscores only; other runs become one dash."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-") or "unknown"


def describe(backend: Backend) -> Environment:
    """The environment of ``backend`` in this process (probes it; never raises)."""
    framework_version = backend.version()
    if backend.is_gpu:
        model, capability, driver = _cuda_device(backend.device_index)
        runtime = _runtime_version(backend)
    else:
        model, capability, driver, runtime = cpu_model(), "", "", ""
        if backend.is_simulator:
            model = f"CUDA simulator on {model}"
    return Environment(
        device_model=model,
        compute_capability=capability,
        driver_version=driver,
        runtime_version=runtime,
        backend=backend.name,
        framework_version=framework_version,
        python_version=platform.python_version(),
    )


def _cuda_device(index: int) -> tuple[str, str, str]:
    from pytest_gpucheck.backends.devices import cuda_driver

    driver = cuda_driver()
    for device in driver.devices:
        if device.index == index:
            major, minor = device.compute_capability
            return device.name, f"{major}.{minor}", driver.version_string
    return f"CUDA device #{index}", "", driver.version_string


def _runtime_version(backend: Backend) -> str:
    """The CUDA runtime the framework was built with, where it says so."""
    try:
        return backend.runtime_version()
    except Exception:  # a version is informative only; never fail a benchmark over it
        return ""


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def environment_from_dict(data: dict[str, Any]) -> Environment:
    """Rebuild an :class:`Environment` from a stored record (missing fields read as "")."""
    fields = Environment.__dataclass_fields__
    return Environment(**{name: str(data.get(name, "")) for name in fields})
