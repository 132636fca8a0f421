"""Hypothesis under MPI: every rank must draw the same examples and shrink the same way.

Each rank runs its own hypothesis engine.  With ``derandomize=True``, no
example database, no timing-based health checks and no ``explain`` phase, the
engines make identical choices, and because the checks' verdicts are
collective (:func:`.checks.collective_verdict`) they also shrink identically.
:func:`assert_same_example` turns any divergence into a clear failure rather
than a deadlock in mismatched communication.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, settings


def mpi_settings(max_examples: int) -> settings:
    """Settings that keep every rank's hypothesis engine in lockstep."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def assert_same_example(comm: Any, example: Any) -> None:
    """Fail on every rank, naming the ranks, if the ranks drew different examples."""
    everyone = comm.allgather(repr(example))
    if len(set(everyone)) > 1:
        drawn = "; ".join(f"rank {r}: {e}" for r, e in enumerate(everyone))
        raise AssertionError(f"ranks drew different hypothesis examples ({drawn})")
