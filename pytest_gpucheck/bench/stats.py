"""The Mann-Whitney U test on per-round timing samples, in NumPy.

The gate compares the per-round samples of a run with those of the baseline.
Timing samples are not normal (a long right tail from preemption and clock
changes), so a rank test is the right tool: it asks whether one sample tends to
be larger than the other, and one outlier round cannot move it much.  asv makes
the same choice.

This is the large-sample normal approximation with the tie correction and the
continuity correction, which is what ``scipy.stats.mannwhitneyu(...,
method="asymptotic")`` computes (the tests check that it agrees).  SciPy is not
a dependency of the plugin, hence this small implementation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class MannWhitneyResult:
    """U statistic of the first sample and the p-value of the chosen alternative."""

    statistic: float
    pvalue: float


def rank_with_ties(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks of ``values`` (ties get their average rank) and the tie-group sizes."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start index of each run of equal values in the sorted order.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    counts = np.diff(np.r_[starts, sorted_values.size])
    # Average rank of a run starting at (0-based) s with c members: s + (c + 1) / 2.
    run_ranks = starts + (counts + 1) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(run_ranks, counts)
    return ranks, counts


def mann_whitney_u(
    x: ArrayLike, y: ArrayLike, alternative: str = "two-sided"
) -> MannWhitneyResult:
    """Mann-Whitney U test of ``x`` against ``y`` (normal approximation).

    ``alternative`` is ``"two-sided"``, ``"greater"`` (``x`` tends to be larger
    than ``y``) or ``"less"``.  Raises ``ValueError`` for an empty sample or a
    non-finite value, since a p-value computed from them would be meaningless.
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("mann_whitney_u needs two non-empty samples")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("mann_whitney_u got a non-finite sample value")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"unknown alternative {alternative!r}; use two-sided, greater or less")
    n1, n2 = a.size, b.size
    n = n1 + n2
    ranks, tie_counts = rank_with_ties(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    u2 = n1 * n2 - u1
    mean = n1 * n2 / 2.0
    tie_term = float((tie_counts.astype(np.float64) ** 3 - tie_counts).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0.0:
        # Every value is equal: no evidence either way.
        return MannWhitneyResult(u1, 1.0)
    sigma = math.sqrt(variance)
    if alternative == "two-sided":
        z = (max(u1, u2) - mean - 0.5) / sigma
        p = 2.0 * _normal_sf(z)
    elif alternative == "greater":
        p = _normal_sf((u1 - mean - 0.5) / sigma)
    else:
        p = _normal_sf((u2 - mean - 0.5) / sigma)
    return MannWhitneyResult(u1, min(max(p, 0.0), 1.0))


def _normal_sf(z: float) -> float:
    """Survival function of the standard normal distribution."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))
