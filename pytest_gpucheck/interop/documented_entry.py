"""One documented behaviour of the interop table (:mod:`.documented_table`): a
:class:`Documented` entry, the :class:`Trigger` that must still reproduce it, the
conditions (:data:`Condition`) it applies under, and the installed releases it is read
against (:func:`installed_version`, :func:`release`).  :mod:`.documented` judges
exchanges by the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from pytest_gpucheck.backends.array_facts import is_compact
from pytest_gpucheck.backends.base import first_installed_version
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from pytest_gpucheck.interop.converters import Converter

Condition = Callable[[Case, Exchange], bool]


def always(case: Case, result: Exchange) -> bool:
    return True


def unaligned_64(case: Case, result: Exchange) -> bool:
    """The producer's data pointer is not 64-byte aligned (XLA's CPU requirement)."""
    return result.producer is not None and result.producer.pointer % 64 != 0


def non_compact(case: Case, result: Exchange) -> bool:
    """The producer's layout has gaps (no axis permutation makes it contiguous)."""
    facts = result.producer
    return facts is not None and not is_compact(facts.shape, facts.strides,
                                                facts.dtype.itemsize)


def is_bfloat16(case: Case, result: Exchange) -> bool:
    return case.dtype == "bfloat16"


def non_standard_dtype(case: Case, result: Exchange) -> bool:
    """A dtype the array API standard does not name (float16, bfloat16)."""
    return case.dtype in ("float16", "bfloat16")


def empty(case: Case, result: Exchange) -> bool:
    """The producer's array holds no element (its CAI data pointer is 0)."""
    return result.producer is not None and result.producer.size == 0


def producer_readonly(case: Case, result: Exchange) -> bool:
    return result.producer is not None and result.producer.readonly


@dataclass(frozen=True)
class Trigger:
    """An exchange that shows the behaviour (GPU ones reproduce where both sides run)."""

    producer: str
    consumer: str
    case: Case
    protocol: str = "dlpack"


@dataclass(frozen=True)
class Documented:
    """A behaviour a library documents (or a known defect), with its source."""

    key: str
    outcome: Outcome  # COPIES, REFUSES, or WRONG for a known defect
    summary: str
    source: str
    protocols: tuple[str, ...]
    trigger: Trigger | None
    producers: str = "*"
    consumers: str = "*"
    when: Condition = always
    error: str = ""  # regex matched against "ExceptionType: message" of a refusal
    problem: str = ""  # text every matching problem of a known defect contains
    #: A known upstream defect: matching items are expected failures (xfail) naming
    #: ``source``.  WRONG entries always are; a REFUSES entry is one when the refusal
    #: is a bug (JAX's copy=True on CUDA), not a documented limit.
    defect: bool = False
    #: The distribution whose behaviour this is (its installed version is named
    #: when the trigger stops reproducing).
    framework: str = ""
    #: "distribution version" pairs this behaviour was measured with.
    seen: tuple[str, ...] = ()
    #: The first release of ``framework`` that behaves so ("0.7.0"); empty: every one.
    since: str = ""
    #: The first release of ``framework`` that no longer behaves so ("2.9"); empty: none.
    before: str = ""

    @property
    def known_defect(self) -> bool:
        """True when matching items are expected failures rather than passes."""
        return self.defect or self.outcome is Outcome.WRONG

    def applies(self) -> bool:
        """False when ``framework``'s installed release is before ``since``, or ``before``
        or later."""
        if not (self.since or self.before):
            return True
        installed = installed_version(self.framework)
        if installed is None:
            return False
        now = release(installed.split()[1])
        return ((not self.since or now >= release(self.since))
                and (not self.before or now < release(self.before)))

    @property
    def releases(self) -> str:
        """The releases this behaviour is one of, in words."""
        if self.since and self.before:
            return f"{self.framework} {self.since} to before {self.before}"
        if self.since:
            return f"{self.framework} {self.since} and later"
        if self.before:
            return f"{self.framework} before {self.before}"
        return f"every {self.framework} release"

    def matches(self, case: Case, result: Exchange, converter: Converter) -> bool:
        """True when this entry explains ``result`` of ``converter`` on ``case``."""
        if result.outcome is not self.outcome or converter.origin != "library":
            return False
        if converter.protocol not in self.protocols:
            return False
        if not (fnmatchcase(converter.producer, self.producers)
                and fnmatchcase(converter.consumer, self.consumers)):
            return False
        # After the cheap tests: it reads the framework's package metadata.
        if not self.applies():
            return False
        if not self.when(case, result):
            return False
        if self.outcome is Outcome.REFUSES:
            return re.search(self.error, result.error_text) is not None
        return True


#: Distributions a framework ships under (CuPy has one wheel per CUDA major version).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "cupy": ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"),
}


def installed_version(framework: str) -> str | None:
    """``"name version"`` of the installed distribution of ``framework`` (None: not installed).

    Read from the package metadata: nothing is imported.
    """
    return first_installed_version(*DISTRIBUTIONS.get(framework, (framework,))) or None


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: ``"2.3.0+cu121"`` -> ``(2, 3, 0)``."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match[0].split(".")) if match else ()
