"""The producer side of DLPack: ``__dlpack_device__`` and the ``__dlpack__`` keywords.

A producer must name its device truthfully, hand out a versioned capsule when
asked with ``max_version=(1, 0)`` (or a legacy one if it predates DLPack 1.0,
which is reported), accept its own device as ``dl_device``, accept
``stream=None`` on the CPU, and honour ``copy=True``/``copy=False``.
"""

from __future__ import annotations

import ctypes
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_gpucheck.interop.documented import export_refusal

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.interop.cases import Case

KDL_CPU = 1
KDL_CUDA = 2

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def capsule_name(capsule: Any) -> str:
    """``dltensor_versioned`` (DLPack >= 1.0) or ``dltensor`` (legacy)."""
    return (_capsule_name(capsule) or b"").decode()


def expected_device(adapter: Adapter) -> tuple[int, int]:
    """The ``(device_type, device_id)`` pair the adapter's arrays must report.

    The CUDA simulator keeps its arrays in host memory, and what it exports
    through DLPack is that memory: the CPU device is the truthful answer.
    """
    if adapter.device.startswith("cuda:"):
        return (KDL_CUDA, int(adapter.device.split(":")[1]))
    return (KDL_CPU, 0)


@dataclass
class ExportReport:
    """What a producer's ``__dlpack__`` did when asked in each supported way."""

    device: tuple[int, int] | None = None
    versioned: bool | None = None
    keywords: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: documented refusals of a keyword (key -> summary), not problems
    documented: dict[str, str] = field(default_factory=dict)


def missing_dlpack(adapter: Adapter, array: Any) -> str | None:
    """Why ``array`` is no DLPack producer at all (None when it is one).

    Not every device array speaks DLPack: numba-cuda's ``DeviceNDArray`` and the
    cuda-python backend's ``DeviceArray`` export only the CUDA Array Interface.
    That is a fact to report (n/a, with this reason), not a failure; an array
    with only one of the two methods is a broken producer and is checked.
    """
    if not hasattr(array, "__dlpack__") and not hasattr(array, "__dlpack_device__"):
        return f"{adapter.name} arrays ({type(array).__qualname__}) have no __dlpack__"
    return None


def check_dlpack_export(adapter: Adapter, case: Case) -> ExportReport:
    """Ask ``adapter``'s array for DLPack capsules in every way its signature allows.

    Call it only for producers :func:`missing_dlpack` accepts.
    """
    array = adapter.produce(case)
    report = ExportReport()
    for method in ("__dlpack__", "__dlpack_device__"):
        if not hasattr(array, method):
            report.problems.append(f"{adapter.name} arrays have no {method} (DLPack needs both)")
    if report.problems:
        return report
    device_type, device_id = array.__dlpack_device__()
    report.device = (int(device_type), int(device_id))
    expected = expected_device(adapter)
    if report.device != expected:
        report.problems.append(f"__dlpack_device__() is {report.device}, but the array is on "
                               f"{adapter.device} {expected}")
    try:
        parameters = set(inspect.signature(array.__dlpack__).parameters)
    except (TypeError, ValueError):  # opaque Cython method: try the standard keywords
        parameters = {"stream", "max_version", "dl_device", "copy"}
    report.keywords = sorted(parameters & {"stream", "max_version", "dl_device", "copy"})
    cpu = expected[0] == KDL_CPU
    base: dict[str, Any] = {"stream": None} if cpu and "stream" in parameters else {}
    attempts: list[tuple[str, dict[str, Any]]] = []
    readonly = adapter.facts(array).readonly
    if readonly and "max_version" in parameters:
        # Only a versioned capsule can say read-only; producers refuse (documented)
        # to export read-only memory in a legacy one, so every request asks for 1.0.
        base["max_version"] = (1, 0)
    else:
        attempts.append(("no keywords", {}))
    if cpu and "stream" in parameters:
        attempts.append(("stream=None", base))
    if "max_version" in parameters:
        attempts.append(("max_version=(1, 0)", {**base, "max_version": (1, 0)}))
    if "dl_device" in parameters:
        attempts.append(("dl_device=own device", {**base, "dl_device": expected}))
    if "copy" in parameters:
        attempts.append(("copy=False", {**base, "copy": False}))
        attempts.append(("copy=True", {**base, "copy": True}))
    for label, keywords in attempts:
        try:
            capsule = array.__dlpack__(**keywords)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            error = f"{type(exc).__name__}: {first}"
            # copy=True is the dlpack-copy protocol's request (CuPy refuses it on the device).
            entry = (export_refusal(adapter.name, "dlpack-copy", error)
                     if keywords.get("copy") is True else None)
            if entry is not None:
                report.documented[entry.key] = entry.summary
            else:
                report.problems.append(f"__dlpack__({label}) raised {error}")
            continue
        name = capsule_name(capsule)
        if name not in ("dltensor", "dltensor_versioned"):
            report.problems.append(f"__dlpack__({label}) returned a capsule named {name!r}")
        if "max_version" in keywords:
            report.versioned = name == "dltensor_versioned"
    return report
