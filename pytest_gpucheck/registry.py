"""Implementations of the bundled kernels: bundled ones and users' own.

An implementation is (kernel, backend, callable).  Users register theirs with
:func:`implements` in a ``conftest.py``; the conformance suites check every
registered implementation of a kernel on each selected backend.  A backend that
cannot express a kernel is recorded with :func:`not_applicable` and a reason,
so the report shows the cell instead of leaving it silently absent.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Implementation:
    """One implementation of a kernel on a backend."""

    kernel: str
    backend: str
    func: Callable[..., Any]
    name: str
    origin: str  # "bundled" or "user"
    #: Clauses expected to fail, with the reason of each: ``(("one NaN", "why"), ...)``
    #: (:func:`implements`'s ``xfail``).
    xfail: tuple[tuple[str, str], ...] = ()

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
    #: The argument an in-place kernel updates (it then takes no ``out``), or None.
    in_place: str | None = None

    def describe(self, kernel: str) -> str:
        """``saxpy(alpha, x, y, out[, launch])`` (and the returning form where allowed)."""
        writing = f"{kernel}({', '.join((*self.inputs, 'out'))}[, launch])"
        if self.requires_out:
            return writing
        returning = ", ".join((*self.inputs, *(f"{name}=..." for name in self.sizes)))
        return f"{writing}, or {kernel}({returning}[, launch]) returning the result"


def contract_of(kernel: str) -> Contract | None:
    """The calling convention of ``kernel``, read from its catalog entry
    (``pytest_gpucheck.reference_kernels.catalog``), or None for a kernel the catalog lacks
    (registered without the signature check).  Read on use: importing the registry imports
    no NumPy."""
    from pytest_gpucheck.reference_kernels import CATALOG

    entry = CATALOG.get(kernel)
    if entry is None:
        return None
    return Contract(entry.arguments, entry.sizes, entry.requires_out, entry.in_place)


def __getattr__(name: str) -> Any:
    # ``CONTRACTS`` and ``IN_PLACE`` (every kernel's contract, the in-place kernels) are
    # views of the catalog, built when first read.
    from pytest_gpucheck.reference_kernels import CATALOG

    if name == "CONTRACTS":
        return {kernel: contract_of(kernel) for kernel in CATALOG}
    if name == "IN_PLACE":
        return frozenset(kernel for kernel, entry in CATALOG.items() if entry.in_place)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def contract_problem(kernel: str, func: Callable[..., Any]) -> str | None:
    """Why ``func`` cannot be called the way the suites call ``kernel``, or None.

    The suites pass the inputs positionally, then ``out`` (or, to a callable
    without ``out``, the sizes) and ``launch`` by keyword; the check binds
    exactly that call to the callable's signature, so a missing, extra or
    misplaced parameter is found at registration instead of as a bare
    ``TypeError`` in the middle of a test.
    """
    contract = contract_of(kernel)
    if contract is None:
        return None
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin or extension callable: nothing to read
        return None
    parameters = signature.parameters
    writes_out = "out" in parameters
    if contract.in_place is not None and writes_out:
        return f"{kernel} updates `{contract.in_place}` in place and takes no `out`"
    if contract.requires_out and not writes_out:
        return f"{kernel} has no input to size a result from, so it must take `out`"
    keywords: dict[str, object] = {}
    if writes_out:
        keywords["out"] = _PLACEHOLDER
    elif contract.in_place is None:
        keywords.update(dict.fromkeys(contract.sizes, _PLACEHOLDER))
    if "launch" in parameters:
        keywords["launch"] = _PLACEHOLDER
    try:
        signature.bind(*(_PLACEHOLDER,) * len(contract.inputs), **keywords)
    except TypeError as exc:
        return str(exc)
    return None


_PLACEHOLDER = object()


class RegistrationError(TypeError, ValueError):
    """A registration that cannot be used: an unknown kernel or backend, a callable off the
    kernel's contract, a name taken.  A ``TypeError`` and a ``ValueError`` (what these
    checks raised before it existed); raised while pytest loads a ``conftest.py``, the
    plugin reports it as one usage line
    (:func:`pytest_gpucheck.usage_errors.conftest_line`).
    """

_implementations: dict[tuple[str, str, str], Implementation] = {}
_not_applicable: dict[tuple[str, str], str] = {}


def _validate(kernel: str, backend: str) -> None:
    from pytest_gpucheck.backends import BACKENDS
    from pytest_gpucheck.reference_kernels import CATALOG
    from pytest_gpucheck.reference_kernels.catalog import VARIANTS, resolve

    if resolve(kernel) is None:  # a variant (nansum) enters the catalog here
        raise RegistrationError(
            f"unknown kernel {kernel!r}; valid kernels: {', '.join(sorted(CATALOG))}; "
            f"variants: {', '.join(sorted(set(VARIANTS) - set(CATALOG)))}")
    if backend not in BACKENDS:
        raise RegistrationError(
            f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")


def implements(
    kernel: str, *, backend: str, name: str | None = None, origin: str = "user",
    variant: str | None = None, xfail: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Register the decorated callable as an implementation of ``kernel`` on ``backend``.

    The calling convention of each kernel is in ``docs/kernels.md``: inputs
    are device arrays of the backend; a parameter named ``out`` receives a
    preallocated output to write (otherwise the result is returned); a
    parameter named ``launch`` receives a
    :class:`~pytest_gpucheck.checking.kernel_launch.LaunchConfig`.

    ``variant`` registers it for a contract variant of the kernel instead
    (``implements("sum", ..., variant="nan")`` is ``implements("nansum", ...)``: NaN
    elements left out, checked against ``np.nansum``).  ``xfail`` maps clauses of the
    contract this implementation is expected to fail, named as the boundary sweep names
    its value classes (``{"one NaN": "skips NaN by design"}``), to the reason: the
    item is an expected failure with that reason when those cases fail and everything
    else passes, and a failure when they pass (strict).

    >>> @implements("vector_add", backend="numpy", name="doc_example")
    ... def add(a, b, out):
    ...     out[...] = a + b
    """

    def register(func: F) -> F:
        __tracebackhide__ = True
        kernel_name = _variant_of(kernel, variant)
        _validate(kernel_name, backend)
        clauses = _expected_failures(kernel_name, backend, xfail)
        return _register(kernel_name, backend, func, name, origin, clauses)

    return register


def _variant_of(kernel: str, variant: str | None) -> str:
    """The name of ``kernel``'s ``variant``, or ``kernel`` itself without one."""
    if variant is None:
        return kernel
    from pytest_gpucheck.reference_kernels.catalog import variant_name

    try:
        return variant_name(kernel, variant)
    except KeyError as exc:
        raise RegistrationError(str(exc.args[0])) from None


def _expected_failures(kernel: str, backend: str,
                       xfail: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """``xfail`` checked against the kernel's clauses: each a value class of its boundary
    sweep (the names the sweep prints), each with a reason."""
    if not xfail:
        return ()
    from pytest_gpucheck.reference_kernels.catalog import entry_for
    from pytest_gpucheck.reference_kernels.value_classes import classes_for

    # The sweep's classes: the kernel's own, then those derived from its dtypes (the
    # derived cases name their argument too, ``x: NaN first``; the clause is the class).
    entry = entry_for(kernel)
    derived = [c.name for dtype in entry.dtypes for c in classes_for(dtype, role="input")]
    clauses = tuple(dict.fromkeys((*entry.edge_values, *derived)))
    if not isinstance(xfail, Mapping):
        raise RegistrationError(
            f"{kernel} on {backend}: xfail= takes a dict of clause -> reason, e.g. "
            f"xfail={{{clauses[0] if clauses else 'clause'!r}: 'why'}}")
    for clause, reason in xfail.items():
        if clause not in clauses:
            valid = ", ".join(repr(c) for c in clauses) or "none (it has no value classes)"
            raise RegistrationError(
                f"{kernel} on {backend}: xfail names no clause of its contract: {clause!r}; "
                f"its clauses (the value classes of its boundary sweep) are {valid}")
        if not isinstance(reason, str) or not reason.strip():
            raise RegistrationError(
                f"{kernel} on {backend}: xfail[{clause!r}] needs a reason, a non-empty string")
    return tuple((clause, reason) for clause, reason in xfail.items())


def _register(kernel: str, backend: str, func: F, name: str | None, origin: str,
              xfail: tuple[tuple[str, str], ...]) -> F:
    """Check ``func`` against ``kernel``'s contract and record it."""
    __tracebackhide__ = True
    impl_name: str = name or str(getattr(func, "__name__", "impl"))
    problem = contract_problem(kernel, func)
    if problem is not None:
        shown = f"{getattr(func, '__qualname__', impl_name)}{_signature_text(func)}"
        raise RegistrationError(
            f"{kernel} on {backend}: {shown} does not match the contract ({problem}); "
            f"expected {_describe(kernel)} (docs/kernels.md)"
        )
    key = (kernel, backend, impl_name)
    new = Implementation(kernel, backend, func, impl_name, origin, xfail)
    existing = _implementations.get(key)
    # The same function registered again (a conftest imported twice) replaces
    # itself; another function under the same name is a mistake.
    if existing is not None and existing.func is not func and existing.where != new.where:
        raise RegistrationError(
            f"{kernel} on {backend} already has an implementation named {impl_name!r} "
            f"({existing.where}); pass name=... to register another"
        )
    _implementations[key] = new
    return func


def _describe(kernel: str) -> str:
    contract = contract_of(kernel)
    return contract.describe(kernel) if contract is not None else f"{kernel}(...)"


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


#: Entry-point group of modules that register implementations when imported: the
#: bundled ones (this distribution's ``bundled``) and any third-party package's.
IMPLEMENTATIONS_GROUP = "pytest_gpucheck.implementations"
#: Entry-point group of packages whose folder holds conformance suites that
#: ``--gpu-conformance`` adds to the run (this distribution's ``bundled``).
SUITES_GROUP = "pytest_gpucheck.suites"
#: This project's distribution: its entry points load first.
DISTRIBUTION = "pytest-gpucheck"

_bundled_loaded = False


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The group's entry points, this project's first, then by distribution and name."""

    def key(ep: importlib.metadata.EntryPoint) -> tuple[bool, str, str]:
        dist = _distribution_name(ep)
        return (dist != DISTRIBUTION, dist, ep.name)

    return sorted(importlib.metadata.entry_points(group=group), key=key)


def _distribution_name(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(dist.metadata["Name"]) if dist is not None else "?"


def load_entry_point(ep: importlib.metadata.EntryPoint, group: str) -> Any:
    """Import ``ep``; a failure is one usage error naming the distribution, not a traceback."""
    try:
        return ep.load()
    except Exception as exc:
        dist = getattr(ep, "dist", None)
        where = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown"
        raise pytest.UsageError(
            f"gpucheck: the {group} entry point {ep.name!r} = {ep.value!r} of the "
            f"installed package {where} failed to load ({type(exc).__name__}: {exc}); "
            "fix or uninstall that package"
        ) from None


def load_bundled() -> None:
    """Import, once, every module registered in the ``pytest_gpucheck.implementations``
    entry-point group: the bundled implementations and those third-party packages ship.

    Their modules import no framework at import time: each kernel body
    imports its framework when first called, so registering them is cheap.
    Raises :class:`pytest.UsageError` (one line) for an entry point that fails.
    """
    global _bundled_loaded
    if _bundled_loaded:
        return
    for ep in _entry_points(IMPLEMENTATIONS_GROUP):
        load_entry_point(ep, IMPLEMENTATIONS_GROUP)
    _bundled_loaded = True


def suite_folders() -> list[Path]:
    """The folders of the conformance suites registered in ``pytest_gpucheck.suites``."""
    folders = []
    for ep in _entry_points(SUITES_GROUP):
        module = load_entry_point(ep, SUITES_GROUP)
        where = getattr(module, "__file__", None)
        if where is None:
            raise pytest.UsageError(
                f"gpucheck: the {SUITES_GROUP} entry point {ep.name!r} = {ep.value!r} of "
                f"{_distribution_name(ep)} is not a package with a folder; point it at the "
                "package that holds the test modules")
        folders.append(Path(where).parent)
    return folders
