"""Implementations of the bundled kernels: bundled ones and users' own.

An implementation is (kernel, backend, callable).  Users register theirs with
:func:`implements` in a ``conftest.py``; the conformance suites check every
registered implementation of a kernel on each selected backend.  A backend that
cannot express a kernel is recorded with :func:`not_applicable` and a reason,
so the report shows the cell instead of leaving it silently absent.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Implementation:
    """One implementation of a kernel on a backend."""

    kernel: str
    backend: str
    func: Callable[..., Any]
    name: str
    origin: str  # "bundled" or "user"

    @property
    def id(self) -> str:
        """Test-id fragment: ``numba-cuda`` or ``numba-cuda:my_add`` for a second one."""
        return f"{self.backend}:{self.name}"

    @property
    def writes_out(self) -> bool:
        """True when the callable takes an ``out`` argument instead of returning."""
        return "out" in inspect.signature(self.func).parameters

    @property
    def takes_launch(self) -> bool:
        """True when the callable takes a ``launch`` argument (a LaunchConfig)."""
        return "launch" in inspect.signature(self.func).parameters

    @property
    def where(self) -> str:
        module = getattr(self.func, "__module__", "?")
        return f"{module}.{getattr(self.func, '__qualname__', self.name)}"


@dataclass(frozen=True)
class Contract:
    """The calling convention of one kernel (the ``arguments`` column of docs/kernels.md)."""

    #: Inputs, passed positionally in this order.
    inputs: tuple[str, ...]
    #: Sizes passed by keyword to an implementation that returns its result (no ``out``).
    sizes: tuple[str, ...] = ()
    #: True when the kernel has no input to size a result from: it must take ``out``.
    requires_out: bool = False

    def describe(self, kernel: str) -> str:
        """``saxpy(alpha, x, y, out[, launch])`` (and the returning form where allowed)."""
        writing = f"{kernel}({', '.join((*self.inputs, 'out'))}[, launch])"
        if self.requires_out:
            return writing
        returning = ", ".join((*self.inputs, *(f"{name}=..." for name in self.sizes)))
        return f"{writing}, or {kernel}({returning}[, launch]) returning the result"


#: The contract of every bundled kernel; ``conformance/specs.py`` draws its cases in
#: this argument order (a test checks the two agree).  A kernel missing here is
#: registered without the signature check.
CONTRACTS: dict[str, Contract] = {
    "vector_add": Contract(("a", "b")),
    "saxpy": Contract(("alpha", "x", "y")),
    "sigmoid": Contract(("x",)),
    "add_one_2d": Contract(("a",)),
    "index_map_1d": Contract((), requires_out=True),
    "index_map_2d": Contract((), requires_out=True),
    "index_map_3d": Contract((), requires_out=True),
    "index_map_grid_stride": Contract((), requires_out=True),
    "transpose": Contract(("a",)),
    "sum": Contract(("x",)),
    "dot": Contract(("x", "y")),
    "max": Contract(("x",)),
    "weighted_sum": Contract(("x", "w")),
    "sum_of_squares": Contract(("x",)),
    "histogram": Contract(("x",), sizes=("nbins",)),
    "monte_carlo_pi": Contract(("seed",), sizes=("n", "dtype")),
    "heat_step_1d": Contract(("u", "alpha")),
    "heat_steps_1d": Contract(("u", "alpha", "steps")),
    "laplacian_2d": Contract(("u",)),
    "halo_exchange_1d": Contract(("a", "width")),
    "halo_exchange_2d": Contract(("a", "width")),
    "matmul": Contract(("a", "b")),
    "matmul_tiled": Contract(("a", "b")),
    # ufuncs
    "ufunc_saxpy": Contract(("alpha", "x", "y")),
    "gufunc_dot": Contract(("x", "y")),
    "gufunc_laplacian_2d": Contract(("u",)),
    # transforms
    "grad_sum_of_squares": Contract(("x",)),
    "grad_weighted_sum": Contract(("x", "w")),
    "grad_sigmoid": Contract(("x",)),
    "grad_heat_step_1d": Contract(("u", "alpha", "g")),
    "vmap_saxpy": Contract(("alpha", "x", "y")),
    # multi-device
    "sharded_sum": Contract(("x",)),
    "sharded_heat_step_1d": Contract(("u", "alpha")),
    # grid-sync
    "heat_steps_grid_sync": Contract(("u", "alpha", "steps")),
    # fused
    "fused_saxpy": Contract(("alpha", "x", "y")),
    "fused_sigmoid": Contract(("x",)),
    "fused_sum_of_squares": Contract(("x",)),
}

#: In-place kernels update ``a`` and take no ``out`` (docs/kernels.md).
IN_PLACE = frozenset({"add_one_2d", "halo_exchange_1d", "halo_exchange_2d"})


def contract_problem(kernel: str, func: Callable[..., Any]) -> str | None:
    """Why ``func`` cannot be called the way the suites call ``kernel``, or None.

    The suites pass the inputs positionally, then ``out`` (or, to a callable
    without ``out``, the sizes) and ``launch`` by keyword; the check binds
    exactly that call to the callable's signature, so a missing, extra or
    misplaced parameter is found at registration instead of as a bare
    ``TypeError`` in the middle of a test.
    """
    contract = CONTRACTS.get(kernel)
    if contract is None:
        return None
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin or extension callable: nothing to read
        return None
    parameters = signature.parameters
    writes_out = "out" in parameters
    if kernel in IN_PLACE and writes_out:
        return f"{kernel} updates `a` in place and takes no `out`"
    if contract.requires_out and not writes_out:
        return f"{kernel} has no input to size a result from, so it must take `out`"
    keywords: dict[str, object] = {}
    if writes_out:
        keywords["out"] = _PLACEHOLDER
    elif kernel not in IN_PLACE:
        keywords.update(dict.fromkeys(contract.sizes, _PLACEHOLDER))
    if "launch" in parameters:
        keywords["launch"] = _PLACEHOLDER
    try:
        signature.bind(*(_PLACEHOLDER,) * len(contract.inputs), **keywords)
    except TypeError as exc:
        return str(exc)
    return None


_PLACEHOLDER = object()

_implementations: dict[tuple[str, str, str], Implementation] = {}
_not_applicable: dict[tuple[str, str], str] = {}


def _validate(kernel: str, backend: str) -> None:
    from reference_kernels import KERNELS

    from .backends import BACKENDS

    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; valid kernels: {', '.join(sorted(KERNELS))}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")


def implements(
    kernel: str, *, backend: str, name: str | None = None, origin: str = "user"
) -> Callable[[F], F]:
    """Register the decorated callable as an implementation of ``kernel`` on ``backend``.

    The calling convention of each kernel is in ``docs/kernels.md``: inputs
    are device arrays of the backend; a parameter named ``out`` receives a
    preallocated output to write (otherwise the result is returned); a
    parameter named ``launch`` receives a :class:`~pytest_gpucheck.launch.LaunchConfig`.

    >>> @implements("vector_add", backend="numpy", name="doc_example")
    ... def add(a, b, out):
    ...     out[...] = a + b
    """

    def register(func: F) -> F:
        __tracebackhide__ = True
        _validate(kernel, backend)
        impl_name: str = name or str(getattr(func, "__name__", "impl"))
        problem = contract_problem(kernel, func)
        if problem is not None:
            shown = f"{getattr(func, '__qualname__', impl_name)}{_signature_text(func)}"
            raise TypeError(
                f"{kernel} on {backend}: {shown} does not match the contract ({problem}); "
                f"expected {CONTRACTS[kernel].describe(kernel)} (docs/kernels.md)"
            )
        key = (kernel, backend, impl_name)
        new = Implementation(kernel, backend, func, impl_name, origin)
        existing = _implementations.get(key)
        # The same function registered again (a conftest imported twice) replaces
        # itself; another function under the same name is a mistake.
        if existing is not None and existing.func is not func and existing.where != new.where:
            raise ValueError(
                f"{kernel} on {backend} already has an implementation named {impl_name!r} "
                f"({existing.where}); pass name=... to register another"
            )
        _implementations[key] = new
        return func

    return register


def _signature_text(func: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return "(...)"


def not_applicable(kernel: str, backend: str, reason: str) -> None:
    """Record that ``backend`` cannot express ``kernel``, and why."""
    _validate(kernel, backend)
    _not_applicable[(kernel, backend)] = reason


def implementations(
    kernel: str | None = None, backend: str | None = None, origin: str | None = None
) -> list[Implementation]:
    """Registered implementations, filtered; bundled ones load on first call."""
    load_bundled()
    return [
        impl
        for impl in _implementations.values()
        if (kernel is None or impl.kernel == kernel)
        and (backend is None or impl.backend == backend)
        and (origin is None or impl.origin == origin)
    ]


def not_applicable_reason(kernel: str, backend: str) -> str | None:
    """Why ``backend`` cannot express ``kernel``, or None."""
    load_bundled()
    return _not_applicable.get((kernel, backend))


_bundled_loaded = False


def load_bundled() -> None:
    """Import the bundled implementations (``conformance.implementations``) once.

    Their modules import no framework at import time: each kernel body
    imports its framework when first called, so registering them is cheap.
    """
    global _bundled_loaded
    if _bundled_loaded:
        return
    _bundled_loaded = True
    import importlib

    try:
        importlib.import_module("conformance.implementations")
    except ModuleNotFoundError as exc:
        if exc.name not in ("conformance", "conformance.implementations"):
            raise
