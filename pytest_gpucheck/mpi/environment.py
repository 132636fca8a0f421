"""Is this process an MPI rank started by a launcher?  See :mod:`pytest_gpucheck.launch_env`.

The launcher variables and the functions that read them live in
:mod:`pytest_gpucheck.launch_env` (one module owns them); these names stay
importable from here for code that still imports them from the MPI package.
"""

from __future__ import annotations

from ..launch_env import (
    RANK_PID_VARIABLE,
    LaunchedRank,
    claim_rank_environment,
    launched_rank,
)

__all__ = ["RANK_PID_VARIABLE", "LaunchedRank", "claim_rank_environment", "launched_rank"]
