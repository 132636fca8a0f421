"""One helper for the implementation modules of the newer families: record, for every
backend a module does not implement a kernel on, why that backend cannot express it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_gpucheck.backends import BACKENDS
from pytest_gpucheck.registry import not_applicable


def not_applicable_elsewhere(kernels: Iterable[str], implemented: Iterable[str],
                             reasons: Mapping[str, str], default: str) -> None:
    """Mark each of ``kernels`` not applicable on every backend outside ``implemented``,
    with the backend's reason from ``reasons`` or ``default``."""
    done = set(implemented)
    for kernel in kernels:
        for backend in BACKENDS:
            if backend not in done:
                not_applicable(kernel, backend, reasons.get(backend, default))


__all__ = ["not_applicable_elsewhere"]
