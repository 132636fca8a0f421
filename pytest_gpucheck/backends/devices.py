"""CUDA device discovery and selection, without importing any framework.

Discovery talks to the CUDA driver through ``ctypes`` (``cuInit`` creates no
context), so the plugin can say why GPU backends are unavailable and pick this
process's device *before* CuPy, JAX, Numba or PyTorch create a context on the
wrong one.  ``CUDA_VISIBLE_DEVICES`` is honoured because the driver applies it.

Selection with ``--gpu-device=auto`` takes a *slot*, then wraps it round robin
over the visible devices:

1. ``PYTEST_GPUCHECK_LOCAL_RANK``: set by the MPI support from the
   shared-memory split of ``COMM_WORLD`` when running under ``mpiexec``;
2. the launchers' node-local rank variables (Open MPI, MPICH/Hydra, SLURM, ...);
3. the pytest-xdist worker number (``gw3`` -> 3);
4. otherwise 0.

(:func:`pytest_gpucheck.environment.local_slot` reads them.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

# The node-local rank variables live with the other launcher variables
# (pytest_gpucheck.environment).
from pytest_gpucheck.environment import local_slot

if TYPE_CHECKING:
    import ctypes

_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CUDA_ERROR_NO_DEVICE = 100


@dataclass(frozen=True)
class CudaDevice:
    """One visible CUDA device as the driver reports it."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    total_memory: int
    #: ``0000:3B:00.0``: names the physical GPU whatever CUDA_VISIBLE_DEVICES renumbers.
    pci_bus_id: str = ""

    def describe(self) -> str:
        major, minor = self.compute_capability
        gib = self.total_memory / 2**30
        return f"{self.name} (cc {major}.{minor}, {gib:.0f} GiB) #{self.index}"


@dataclass(frozen=True)
class CudaDriver:
    """What the CUDA driver says: its version and devices, or why there are none."""

    version: int | None = None
    devices: tuple[CudaDevice, ...] = ()
    reason: str = ""

    @property
    def available(self) -> bool:
        return bool(self.devices)

    @property
    def version_string(self) -> str:
        if self.version is None:
            return ""
        return f"{self.version // 1000}.{self.version % 1000 // 10}"


def _load_libcuda() -> ctypes.CDLL | None:
    import ctypes
    import ctypes.util

    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    found = ctypes.util.find_library("cuda")
    if found:
        names.append(found)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@lru_cache(maxsize=1)
def cuda_driver() -> CudaDriver:
    """Query the CUDA driver once per process; never raises."""
    import ctypes

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    lib = _load_libcuda()
    if lib is None:
        return CudaDriver(reason="no NVIDIA driver found (libcuda could not be loaded)")
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    status = lib.cuInit(0)
    if status != 0:
        if status == _CUDA_ERROR_NO_DEVICE or visible is not None:
            hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
            return CudaDriver(version.value or None, reason=f"no CUDA device visible{hint}")
        return CudaDriver(version.value or None, reason=f"cuInit failed with CUDA error {status}")
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for ordinal in range(count.value):
        handle = ctypes.c_int(0)
        lib.cuDeviceGet(ctypes.byref(handle), ordinal)
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, handle)
        major, minor, memory = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_size_t(0)
        lib.cuDeviceGetAttribute(
            ctypes.byref(major), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle
        )
        lib.cuDeviceGetAttribute(
            ctypes.byref(minor), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle
        )
        lib.cuDeviceTotalMem_v2(ctypes.byref(memory), handle)
        bus = ctypes.create_string_buffer(64)
        if lib.cuDeviceGetPCIBusId(bus, 64, handle) != 0:
            bus.value = b""
        devices.append(
            CudaDevice(
                ordinal,
                name.value.decode(errors="replace"),
                (major.value, minor.value),
                memory.value,
                bus.value.decode(errors="replace"),
            )
        )
    if not devices:
        hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return CudaDriver(version.value or None, reason=f"no CUDA device visible{hint}")
    return CudaDriver(version.value or None, tuple(devices))


@dataclass(frozen=True)
class DeviceSelection:
    """The CUDA device index this process uses, and how it was chosen."""

    index: int
    how: str
    oversubscribed: bool = False
    notes: tuple[str, ...] = field(default=())


class DeviceSpecError(ValueError):
    """A ``--gpu-device`` value that is malformed or names no visible device."""


def parse_device_spec(spec: str) -> int | None:
    """``auto`` -> None, ``N`` -> N; anything else raises :class:`DeviceSpecError`."""
    text = spec.strip()
    if text == "auto":
        return None
    if not text.isdigit():
        raise DeviceSpecError(
            f"--gpu-device={spec!r} is not valid; use auto or a device index >= 0"
        )
    return int(text)


def this_process_device(spec: str = "auto") -> DeviceSelection:
    """This process's CUDA device, chosen as the plugin chooses it (``--gpu-device``'s rule).

    ``auto``: the node-local MPI rank, else the pytest-xdist worker number (``gw3`` ->
    3), else 0, round robin over the visible devices; index 0 on a machine without
    one.  Reads only the environment and the CUDA driver (no context is created), so
    a project's ``conftest.py`` may call it before any framework is imported, e.g. to
    place its own arrays (``cupy.cuda.Device(index).use()``, ``f"cuda:{index}"``).
    The ``gpu_device`` fixture gives the same choice, with ``--gpu-device`` applied.
    """
    return select_device(spec, cuda_driver())


def select_device(
    spec: str, driver: CudaDriver, env: Mapping[str, str] | None = None
) -> DeviceSelection:
    """Choose this process's device from ``--gpu-device`` and the environment.

    An explicit index must name a visible device; ``auto`` never fails and, on a
    machine without GPUs, selects index 0 (used only by GPU backends, which are
    then unavailable anyway).
    """
    env = os.environ if env is None else env
    wanted = parse_device_spec(spec)
    count = len(driver.devices)
    if wanted is not None:
        if wanted >= count:
            if count == 0:
                raise DeviceSpecError(
                    f"--gpu-device={wanted}: {driver.reason}; use --gpu-device=auto"
                )
            raise DeviceSpecError(
                f"--gpu-device={wanted}: only {count} CUDA device(s) visible; "
                f"use auto or an index in 0..{count - 1}"
            )
        return DeviceSelection(wanted, f"--gpu-device={wanted}")
    slot, source = local_slot(env)
    if count == 0:
        return DeviceSelection(0, f"auto ({source}; no CUDA device)")
    index = slot % count
    oversubscribed = slot >= count
    how = f"auto ({source}" + (f", round robin over {count} devices)" if oversubscribed else ")")
    return DeviceSelection(index, how, oversubscribed)
