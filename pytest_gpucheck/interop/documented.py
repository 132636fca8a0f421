"""Documented behaviours: when a copy or a refusal is what a library promises.

The suite measures every exchange; this table only decides whether a
measured copy or refusal is acceptable, and names the known upstream defects
(measured "wrong" outcomes, and refusals that are bugs, which the suite
reports as expected failures with the upstream link).  Each entry cites its
source, the framework versions it was seen with, and carries a trigger: a
concrete exchange that must still reproduce it.  When it stops reproducing,
``test_documented_behaviour_reproduces`` says "changed in <framework> <installed
version>" (a skip) where the change is one a user welcomes (a refusal that now
works, a copy that is now zero-copy), and fails naming the versions otherwise.

A behaviour of some releases only names them: ``since`` the first release of
``framework`` that behaves so, ``before`` the first that no longer does.  Outside
them the entry explains nothing (the same outcome there is a failure) and its
trigger is not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from pytest_gpucheck.backends.dtypes import DtypeUnavailable, numpy_dtype
from pytest_gpucheck.interop.cases import Case

# An entry, its trigger and conditions, and the table itself live in modules of their
# own; their names stay importable from here.
from pytest_gpucheck.interop.documented_entry import (
    DISTRIBUTIONS,
    Condition,
    Documented,
    Trigger,
    always,
    empty,
    installed_version,
    is_bfloat16,
    non_compact,
    non_standard_dtype,
    producer_readonly,
    release,
    unaligned_64,
)
from pytest_gpucheck.interop.documented_table import CPU_TIER, DLPACK, DOCUMENTED, H100
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from pytest_gpucheck.interop.converters import Converter

__all__ = ["CPU_TIER", "DISTRIBUTIONS", "DLPACK", "DOCUMENTED", "H100", "Change", "Condition",
           "Documented", "Trigger", "Verdict", "always", "changed", "empty", "export_refusal",
           "installed_version", "is_bfloat16", "judge", "non_compact", "non_standard_dtype",
           "prerequisite_problem", "producer_readonly", "release", "unaligned_64"]



@dataclass(frozen=True)
class Verdict:
    """The suite's judgement of one exchange."""

    kind: str  # "ok", "known" (a known defect), "not available" or "fail"
    outcome: Outcome
    message: str = ""
    documented: Documented | None = None


def judge(case: Case, result: Exchange, converter: Converter) -> Verdict:
    """Accept zero-copy, documented copies/refusals and known defects; fail everything else."""
    outcome = result.outcome
    if outcome is Outcome.NOT_AVAILABLE:
        return Verdict("not available", outcome, result.reason)
    if outcome in (Outcome.ZERO_COPY, Outcome.EMPTY):
        return Verdict("ok", outcome)
    if outcome is Outcome.COPIES and converter.expectation == "copy":
        return Verdict("ok", outcome)
    if outcome is Outcome.WRONG:
        entry = _known_defect(case, result, converter)
        if entry is not None:
            return Verdict("known", outcome, entry.summary, entry)
        return Verdict("fail", outcome, _message(case, result, converter, "wrong"))
    for entry in DOCUMENTED:
        if entry.matches(case, result, converter):
            return Verdict("known" if entry.known_defect else "ok", outcome, entry.summary,
                           entry)
    what = "undocumented copy" if outcome is Outcome.COPIES else "undocumented refusal"
    if converter.origin == "user":
        what = "the converter raised" if outcome is Outcome.REFUSES else what
    return Verdict("fail", outcome, _message(case, result, converter, what))


def _known_defect(case: Case, result: Exchange, converter: Converter) -> Documented | None:
    entries = [e for e in DOCUMENTED if e.matches(case, result, converter)]
    if result.problems and entries and all(
        any(entry.problem in problem for entry in entries) for problem in result.problems
    ):
        return entries[0]
    return None


def _message(case: Case, result: Exchange, converter: Converter, what: str) -> str:
    return (f"{converter.producer}->{converter.consumer} via {converter.id}: {what}\n"
            f"case: {case!r}\n{result.describe()}")



def prerequisite_problem(entry: Documented) -> str | None:
    """Why ``entry``'s trigger cannot even be built here (None when it can).

    The trigger's case needs its dtype: bfloat16 needs ml_dtypes, which a
    core-only install does not have.  That is a missing prerequisite, not a
    behaviour that changed.
    """
    if entry.trigger is None:
        return None
    try:
        numpy_dtype(entry.trigger.case.dtype)
    except DtypeUnavailable as exc:
        return str(exc)
    return None


#: How good an outcome is for a hand-over that may copy; higher is better.
_RANK = {Outcome.WRONG: 0, Outcome.REFUSES: 1, Outcome.COPIES: 2, Outcome.ZERO_COPY: 3,
         Outcome.EMPTY: 3}


@dataclass(frozen=True)
class Change:
    """A documented behaviour whose trigger no longer reproduces it."""

    welcome: bool  # the exchange now does better: report "changed in VERSION", not a failure
    message: str


def changed(entry: Documented, verdict: Verdict, result: Exchange) -> Change | None:
    """None when ``entry`` still explains its trigger's ``result``; else how it changed.

    Welcome: the suite now accepts the exchange without this entry and its
    outcome is better (a refusal that works, a copy that is zero-copy, a known
    defect gone).  Anything else (a new refusal, a new defect, another error)
    is not, and the message names the versions it was seen with and runs with.
    """
    if verdict.documented is not None and verdict.documented.key == entry.key:
        return None
    trigger = entry.trigger
    assert trigger is not None
    names = sorted({item.split()[0] for item in entry.seen} | {entry.framework} - {""})
    installed = ", ".join(v for v in (installed_version(n) for n in names) if v)
    where = f"{trigger.producer}->{trigger.consumer} via {trigger.protocol}"
    welcome = verdict.kind == "ok" and _RANK[verdict.outcome] > _RANK[entry.outcome]
    if welcome:
        # Every framework the entry names, not only its own: numpy's refusal to JAX's
        # unversioned requests stopped because JAX 0.12 asks for versioned capsules, and
        # "changed in numpy 2.5.5" alone sent the reader to the wrong changelog.
        return Change(True, (
            f"{entry.key} changed in {installed or 'an installed version'}: {where} is now "
            f"{verdict.outcome.value} (documented: {entry.outcome.value}; seen with "
            f"{', '.join(entry.seen)}); remove or narrow the entry in "
            "pytest_gpucheck/interop/documented_table.py"))
    return Change(False, (
        f"{entry.key} ({entry.summary}) no longer reproduces with {where}: measured "
        f"{verdict.kind}/{result.outcome.value}\n{result.describe()}\n"
        f"seen with: {', '.join(entry.seen) or 'no version recorded'}; installed: "
        f"{installed or 'none of those'}\n"
        "update pytest_gpucheck/interop/documented_table.py"))


def export_refusal(producer: str, protocol: str, error_text: str) -> Documented | None:
    """The documented refusal explaining a producer's own ``__dlpack__`` raising.

    ``protocol`` names what was asked (``dlpack-copy`` for ``copy=True``); only
    entries about the producer, for every case and consumer, can explain it.
    """
    for entry in DOCUMENTED:
        if (entry.outcome is Outcome.REFUSES and not entry.known_defect
                and entry.applies()
                and protocol in entry.protocols and entry.when is always
                and entry.consumers == "*" and fnmatchcase(producer, entry.producers)
                and re.search(entry.error, error_text)):
            return entry
    return None
