"""Collective outcome: one result per test phase for the whole job, failures labelled by rank.

Every rank makes its own report of each phase (setup, call, teardown) of an
``mpi`` test; the reports' essentials are exchanged, and a failure on any rank
turns every rank's report into a failure that shows each failing rank's
traceback.  Because every rank then sees the same outcome, all ranks take the
same path through the rest of the test (pytest skips ``call`` after a failed
``setup`` on every rank alike) and the next collective cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


def cause_of(text: str) -> str:
    """A failure's cause in one line, from its traceback text: the exception line (the
    first ``E`` line of the last run of them, as pytest prints ``E   Error: message``),
    else the text's last line."""
    lines = text.rstrip().splitlines()
    end = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("E ")), None)
    if end is None:
        return lines[-1].strip() if lines else ""
    start = end
    while start > 0 and lines[start - 1].startswith("E "):
        start -= 1
    return lines[start][1:].strip()


@dataclass(frozen=True)
class RankOutcome:
    """The picklable essentials of one rank's report of one phase."""

    rank: int
    outcome: str  # passed / failed / skipped
    text: str  # the failure's traceback text, the skip reason, or ""
    cause: str = ""  # a failure's exception type and the first line of its message

    @classmethod
    def of(cls, rank: int, report: pytest.TestReport) -> RankOutcome:
        text = cause = ""
        if report.failed:
            text = str(report.longrepr)
            crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
            cause = str(crash).strip().split("\n", 1)[0] if crash else cause_of(text)
        elif report.skipped and isinstance(report.longrepr, tuple):
            text = str(report.longrepr[2])
        return cls(rank, report.outcome, text, cause)


def banner(rank: int) -> str:
    return f"{'-' * 30} rank {rank} {'-' * 30}"


def failure_text(outcomes: list[RankOutcome], size: int, context: str = "") -> str:
    """The combined failure message: the first failing rank and its cause (the line
    pytest's short summary shows), which ranks failed, then each one's traceback."""
    failed = [o for o in outcomes if o.outcome == "failed"]
    ranks = ", ".join(str(o.rank) for o in failed)
    head = f"MPI test failed on rank(s) {ranks} of {size}{context}"
    body = [f"{banner(o.rank)}\n{o.text}" for o in failed]
    cause = [cause_line(failed[0], len(failed), size)] if failed and failed[0].cause else []
    return "\n".join([*cause, head, *body])


def cause_line(first: RankOutcome, failed: int, size: int) -> str:
    """``rank 1 of 2: AssertionError: rank 1 disagrees`` (``rank 0 and 1 more of 4: ...``
    when several failed): short, so the short summary's width keeps the cause."""
    more = f" and {failed - 1} more" if failed > 1 else ""
    return f"rank {first.rank}{more} of {size}: {first.cause}"


def apply_collective(
    report: pytest.TestReport, outcomes: list[RankOutcome], size: int
) -> pytest.TestReport:
    """Make ``report`` (this rank's) the job's outcome for its phase, in place.

    Any failure fails it, with every failing rank's traceback; otherwise a skip
    on any rank skips it (so ranks stay in step); otherwise it passes.
    """
    if any(o.outcome == "failed" for o in outcomes):
        report.outcome = "failed"
        report.longrepr = failure_text(outcomes, size)
    elif report.passed and any(o.outcome == "skipped" for o in outcomes):
        skipped = next(o for o in outcomes if o.outcome == "skipped")
        path, lineno = report.location[0], report.location[1] or 0
        report.outcome = "skipped"
        report.longrepr = (path, lineno, f"skipped on rank {skipped.rank}: {skipped.text}")
    return report


def exchange(comm: Any, mine: RankOutcome) -> list[RankOutcome]:
    """Every rank's outcome of this phase (a collective over ``comm``)."""
    return list(comm.allgather(mine))
