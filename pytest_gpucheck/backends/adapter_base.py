"""What the interop suite needs from a framework, on both sides of an exchange.

As a **producer** an adapter makes an array of a :class:`~pytest_gpucheck.interop.cases.Case`
(values, dtype, layout, read-only flag) on its device.  As a **consumer** it
offers the framework's importers (``from_dlpack``, CUDA Array Interface).
On both sides it measures an array (:class:`~.array_facts.ArrayFacts`), reads it
back to the host and writes single elements, which is how write-through is
proven rather than assumed.  GPU frameworks with streams also offer the two
hooks of the stream-ordering check (:mod:`pytest_gpucheck.interop.streams`).

Each framework's adapter lives beside its backend
(``pytest_gpucheck/backends/<framework>/adapter.py``) and is returned by
:meth:`~pytest_gpucheck.backends.base.Backend.interop_adapter`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from pytest_gpucheck.backends.dtypes import DtypeUnavailable, numpy_dtype

if TYPE_CHECKING:
    from pytest_gpucheck.backends.array_facts import ArrayFacts
    from pytest_gpucheck.backends.base import Backend
    from pytest_gpucheck.backends.exchange_case import Case

#: How a framework represents read-only memory.
ReadOnly = Literal["flag", "never", "always"]


class NotAvailable(Exception):
    """This side cannot take part in the exchange here (the message says why)."""


class Adapter:
    """One framework on one device, seen by the interop suite."""

    name: ClassVar[str]
    #: "flag": arrays may be read-only; "never": no read-only arrays; "always": immutable.
    readonly: ClassVar[ReadOnly] = "flag"

    def __init__(self, backend: Backend) -> None:
        # Typed loosely: each adapter uses its own backend class's extras
        # (torch's device_string, cuda-python's stream, JAX's platform).
        self.backend: Any = backend

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} on {self.device}>"

    @property
    def device(self) -> str:
        """Device key (``cpu``, ``cuda:0``, ``cudasim``); memory is shared only within one."""
        return "cpu"

    # -- producer side ----------------------------------------------------------
    def dtype_problem(self, dtype_name: str) -> str | None:
        """Why this framework cannot hold ``dtype_name`` (None when it can)."""
        try:
            numpy_dtype(dtype_name)
        except DtypeUnavailable as exc:
            return str(exc)
        return None

    def case_problem(self, case: Case) -> str | None:
        """Why this framework cannot produce ``case`` (None when it can)."""
        problem = self.dtype_problem(case.dtype)
        if problem:
            return problem
        if case.readonly and self.readonly == "never":
            return f"{self.name} has no read-only arrays"
        return None

    def produce(self, case: Case) -> Any:
        """The case's array in this framework: a view of a base array with the case's layout."""
        problem = self.case_problem(case)
        if problem:
            raise NotAvailable(problem)
        base = self.upload(case.base_host())
        array = self.view(base, case.slices) if case.view else base
        return self.make_readonly(array) if case.readonly else array

    def upload(self, host: np.ndarray) -> Any:
        """A new array of this framework holding ``host`` with the same memory order."""
        raise NotImplementedError

    def view(self, array: Any, slices: tuple[slice, ...]) -> Any:
        """``array[slices]`` as a view (frameworks without views may copy)."""
        return array[slices]

    def make_readonly(self, array: Any) -> Any:
        """``array`` marked read-only (only called where :attr:`readonly` is not "never")."""
        return array

    # -- consumer side ----------------------------------------------------------
    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        """``f(obj)``: the framework's ``from_dlpack`` with ``copy``, or :class:`NotAvailable`."""
        raise NotAvailable(f"{self.name} has no from_dlpack")

    def cai_importer(self) -> Callable[[Any], Any]:
        """``f(obj)`` importing a CUDA Array Interface producer, or :class:`NotAvailable`."""
        raise NotAvailable(
            f"{self.name} cannot import __cuda_array_interface__ (it describes CUDA device memory)"
        )

    # -- both sides ---------------------------------------------------------------
    def owns(self, array: Any) -> bool:
        """True when ``array`` is of this framework's array type."""
        raise NotImplementedError

    def facts(self, array: Any) -> ArrayFacts:
        """Pointer, shape, byte strides, dtype, device and read-only flag of ``array``."""
        raise NotImplementedError

    def to_host(self, array: Any) -> np.ndarray:
        """A NumPy copy of ``array``'s values (after synchronizing)."""
        raise NotImplementedError

    def writable(self, array: Any) -> bool:
        """True when ``array`` can be written in place through this framework."""
        return not self.facts(array).readonly

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        """Store the 0-d ``value`` at ``index`` in ``array`` (in place, synchronized)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for all work this framework queued on the device."""
        self.backend.synchronize()

    # -- stream ordering (GPU frameworks with streams) ---------------------------------
    @property
    def queues_pending_fill(self) -> bool:
        """True where :meth:`pending_fill` can queue a slow write on a side stream."""
        return False

    def pending_fill(self, value: float, elements: int,
                     spin_cycles: int) -> contextlib.AbstractContextManager[Any]:
        """A context yielding an array of ``elements`` zeros with a fill of ``value``
        still queued behind a ``spin_cycles`` spin kernel on a side stream, that
        stream current while the context is open (the import happens inside it)."""
        raise NotAvailable(f"{self.name}: no way to queue a slow write on a side stream")

    @property
    def has_stream_copy(self) -> bool:
        """True where :meth:`stream_copy` queues a copy on this framework's current stream."""
        return False

    def stream_copy(self, array: Any) -> Any:
        """A copy of ``array`` queued on the current stream (not yet synchronized)."""
        raise NotAvailable(f"{self.name}: no stream-ordered copy to read the import with")
