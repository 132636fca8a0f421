"""Helpers for the implementation modules: register one function on several backends, and
record, for the backends a module does not implement a kernel on, why that backend
cannot express it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pytest_gpucheck.backends import BACKENDS
from pytest_gpucheck.registry import implements, not_applicable

F = TypeVar("F", bound=Callable[..., Any])


def implements_on(kernel: str, backends: Iterable[str], name: str) -> Callable[[F], F]:
    """Register the decorated function as the bundled implementation ``name`` of ``kernel``
    on each of ``backends`` (one function for the backends of one framework)."""
    targets = tuple(backends)

    def register(func: F) -> F:
        for backend in targets:
            implements(kernel, backend=backend, name=name, origin="bundled")(func)
        return func

    return register


def not_applicable_elsewhere(kernels: Iterable[str], implemented: Iterable[str],
                             reasons: Mapping[str, str], default: str) -> None:
    """Mark each of ``kernels`` not applicable on every backend outside ``implemented``,
    with the backend's reason from ``reasons`` or ``default``."""
    done = set(implemented)
    for kernel in kernels:
        for backend in BACKENDS:
            if backend not in done:
                not_applicable(kernel, backend, reasons.get(backend, default))


#: The kernels that check which thread writes which element: only a framework that
#: exposes thread indices can express them.
INDEX_MAPS = ("index_map_1d", "index_map_2d", "index_map_3d", "index_map_grid_stride")


def not_applicable_on(kernels: Iterable[str], backends: Iterable[str], reason: str) -> None:
    """Mark each of ``kernels`` not applicable on each of ``backends``, for ``reason``."""
    targets = tuple(backends)
    for kernel in kernels:
        for backend in targets:
            not_applicable(kernel, backend, reason)


__all__ = ["INDEX_MAPS", "implements_on", "not_applicable_elsewhere", "not_applicable_on"]
