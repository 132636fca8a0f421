"""An array namespace whose creation functions place arrays on one backend's device.

The array API standard's creation functions (``xp.ones``, ``xp.asarray([1, 2])``...) put
arrays on the namespace's *default* device when no ``device=`` is given.  For
array-api-compat's wrapper of PyTorch that is torch's default device, the CPU unless a
program changed it, and the wrapper is one object for ``torch-cpu`` and ``torch-cuda``:
a user's ``xp`` test on ``torch-cuda`` made CPU tensors and ran on the CPU, green and
unseen.  CuPy's default is its *current* device and JAX's a process-wide setting
(``jax_default_device``, which the ``jax-gpu`` probe sets), neither of which need be
the backend's device.  :class:`DeviceNamespace` wraps a namespace so that every
creation function the standard gives a ``device`` parameter gets the backend's device
when the caller gives none; everything else is the wrapped namespace's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

#: Creation functions with a ``device`` parameter whose default is the namespace's
#: default device (array API 2023.12).  The ``*_like`` functions default to their
#: input's device and ``from_dlpack`` to the producer's, so they are left alone.
CREATION_FUNCTIONS = ("arange", "empty", "eye", "full", "linspace", "ones", "zeros")
#: The same in ``xp.fft``.
FFT_CREATION_FUNCTIONS = ("fftfreq", "rfftfreq")


def _is_array(obj: Any) -> bool:
    """Whether ``asarray(obj)`` takes its device from ``obj`` (an array of any framework:
    the standard infers the device from an array, and only from an array)."""
    return any(hasattr(obj, name) for name in (
        "__dlpack__", "__array_interface__", "__cuda_array_interface__", "__array__"))


def _on_device(function: Callable[..., Any], device: Any,
               context: Callable[[], AbstractContextManager[Any]] | None,
               keep_arrays: bool = False) -> Callable[..., Any]:
    """``function`` with ``device=device`` when the caller names none; with a ``context``,
    called inside ``context()`` instead (CuPy: the compat layer ignores ``device=``).
    ``keep_arrays``: ``asarray``, whose array argument keeps its device (keyword mode)."""

    @functools.wraps(function)
    def placed(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("device") is not None:
            return function(*args, **kwargs)
        if context is not None:
            with context():
                return function(*args, **kwargs)
        if not (keep_arrays and args and _is_array(args[0])):
            kwargs["device"] = device
        return function(*args, **kwargs)

    return placed


class _Bound:
    """Attribute access to ``namespace`` with ``names`` placed on ``device``."""

    def __init__(self, namespace: Any, device: Any,
                 context: Callable[[], AbstractContextManager[Any]] | None,
                 names: tuple[str, ...]) -> None:
        self._namespace = namespace
        self._device = device
        self._placed: dict[str, Any] = {name: _on_device(getattr(namespace, name), device, context)
                        for name in names if hasattr(namespace, name)}

    def __getattr__(self, name: str) -> Any:
        placed = self.__dict__.get("_placed", {})
        if name in placed:
            return placed[name]
        return getattr(self.__dict__["_namespace"], name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._namespace)))


class DeviceNamespace(_Bound):
    """``namespace`` with its creation functions defaulting to ``device``.

    ``xp.ones(3)`` is ``namespace.ones(3, device=device)``; ``xp.asarray`` of a Python
    sequence or scalar too, while an array keeps its own device as the standard says;
    ``xp.fft.fftfreq`` likewise.  An explicit ``device=`` wins.  With ``context`` (a
    callable returning a context manager, CuPy's ``cupy.cuda.Device(i)``), the creation
    functions run inside it instead of being passed ``device=``: array-api-compat's CuPy
    wrapper ignores ``device=`` in ``ones`` and the like and refuses a device in
    ``fft.fftfreq``, creating on CuPy's current device.  The wrapped namespace is
    :attr:`namespace`; ``xp.device`` is the namespace's own function (the standard's
    ``device(x)``), the bound device is :attr:`default_device`.
    """

    def __init__(self, namespace: Any, device: Any,
                 context: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        super().__init__(namespace, device, context, CREATION_FUNCTIONS)
        self._placed["asarray"] = _on_device(namespace.asarray, device, context,
                                             keep_arrays=True)
        fft = getattr(namespace, "fft", None)
        if fft is not None:
            self._placed["fft"] = _Bound(fft, device, context, FFT_CREATION_FUNCTIONS)
        self.__name__ = getattr(namespace, "__name__", type(namespace).__name__)

    @property
    def namespace(self) -> Any:
        """The wrapped namespace (array-api-compat's, ``jax.numpy``)."""
        return self._namespace

    @property
    def default_device(self) -> Any:
        """The device the creation functions place arrays on."""
        return self._device

    def __repr__(self) -> str:
        return f"<array namespace {self.__name__} on {self._device}>"
