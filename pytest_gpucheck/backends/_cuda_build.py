"""Shared reasons for GPU backends: no driver, no device, wrong CUDA build."""

from __future__ import annotations

import importlib.util

from pytest_gpucheck.backends.devices import CudaDriver, cuda_driver


def unready(module: str, not_installed: str) -> str | None:
    """Why a CUDA backend cannot even start, from the two checks each makes first and
    without importing the framework: ``module`` is not installed (then ``not_installed``
    is the reason), or no CUDA device can be used; None when both pass."""
    if importlib.util.find_spec(module) is None:
        return not_installed
    return driver_problem()


def driver_problem() -> str | None:
    """Why no CUDA device can be used here, or None when one can."""
    driver: CudaDriver = cuda_driver()
    return None if driver.available else driver.reason


def build_mismatch(framework: str, build: str | None, extra_for: str) -> str | None:
    """Explain a framework built for a newer CUDA major than the driver supports.

    ``build`` is the framework's CUDA version string (``"13.0"``); ``extra_for``
    names what to install instead, e.g. ``cupy-cuda{major}x``.
    """
    driver = cuda_driver()
    if not build or driver.version is None:
        return None
    try:
        build_major = int(str(build).split(".")[0])
    except ValueError:
        return None
    driver_major = driver.version // 1000
    if build_major > driver_major:
        return (
            f"{framework} is built for CUDA {build} but the driver supports CUDA "
            f"{driver.version_string}; install {extra_for.format(major=driver_major)} "
            f"(pip install 'pytest-gpucheck[cuda{driver_major}]')"
        )
    return None


def device_line(index: int) -> str:
    """The driver's description of device ``index`` (for header lines)."""
    devices = cuda_driver().devices
    return devices[index].describe() if index < len(devices) else f"CUDA device #{index}"
