"""Injected sticky errors: a test hook that makes this process behave as after a CUDA
sticky error (an illegal address poisons the context; every later call fails) on one
backend, so the CPU tier can show what ``--gpu-isolate`` buys without a GPU.

Kept apart from :mod:`pytest_gpucheck.processes.routers.isolation` (whose sticky guard
reads it) so that the worker's health probe reads it without importing the router; the
package's face hands the hook on as ``pytest_gpucheck.processes.inject_sticky_error``.
"""

from __future__ import annotations

#: backend name -> the injected sticky error's message (this process only).
_STICKY: dict[str, str] = {}


class StickyError(RuntimeError):
    """What a poisoned backend raises at every later test (see :func:`inject_sticky_error`)."""


def inject_sticky_error(backend: str, message: str) -> None:
    """Test hook: make this process behave as after a CUDA sticky error on ``backend``.

    From now on the backend's health probe fails with ``message`` and every
    later test on ``backend`` in this process fails at setup with
    :class:`StickyError`, as every call on a poisoned CUDA context does.
    """
    _STICKY[backend] = message


def sticky_error(backend: str) -> str | None:
    """The sticky error injected on ``backend`` in this process, if any."""
    return _STICKY.get(backend)


def any_sticky_error() -> bool:
    """True once any backend of this process has an injected sticky error."""
    return bool(_STICKY)


__all__ = ["StickyError", "any_sticky_error", "inject_sticky_error", "sticky_error"]
