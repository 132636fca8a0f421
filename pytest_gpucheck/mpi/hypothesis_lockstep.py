"""Hypothesis under MPI: every rank must draw the same examples and shrink the same way.

Each rank runs its own hypothesis engine.  With ``derandomize=True``, no
example database, no timing-based health checks and no ``explain`` phase, the
engines make identical choices, and because the checks' verdicts are
collective (:func:`.checks.collective_verdict`) they also shrink identically.
:func:`assert_same_example` turns any divergence into a clear failure rather
than a deadlock in mismatched communication.

An exception raised on one rank only (numba-cuda failing to compile on the rank
whose block is not empty) is not collective: that rank goes on to the next
example while its peers wait in the failed example's collective.  The checks
report such an exception to the watchdog (:func:`.watchdog.rank_local_failure`)
and :func:`assert_same_example` clears it once every rank has reached the next
example; ranks that do not meet there within seconds get the job stopped, with
the rank and its exception named.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, settings

from pytest_gpucheck.mpi.watchdog import ranks_in_step


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
    ranks_in_step()  # every rank reached this example: none waits in an earlier collective
    if len(set(everyone)) > 1:
        drawn = "; ".join(f"rank {r}: {e}" for r, e in enumerate(everyone))
        raise AssertionError(f"ranks drew different hypothesis examples ({drawn})")
