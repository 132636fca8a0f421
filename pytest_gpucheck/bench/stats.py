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

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

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
    mean = n1 * n2 / 2.0
    tie_term = float((tie_counts.astype(np.float64) ** 3 - tie_counts).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    # The other sample's U is n1 n2 - u1, and its excess over the mean is u1's negated.
    return _asymptotic(u1, mean, variance, alternative)


def _asymptotic(statistic: float, mean: float, variance: float,
                alternative: str) -> MannWhitneyResult:
    """The normal approximation's p-value of a rank statistic with its null ``mean`` and
    ``variance``, continuity corrected; no variance (every value equal) is no evidence."""
    if variance <= 0.0:
        return MannWhitneyResult(statistic, 1.0)
    sigma = math.sqrt(variance)
    if alternative == "two-sided":
        p = 2.0 * _normal_sf((abs(statistic - mean) - 0.5) / sigma)
    elif alternative == "greater":
        p = _normal_sf((statistic - mean - 0.5) / sigma)
    else:
        p = _normal_sf((mean - statistic - 0.5) / sigma)
    return MannWhitneyResult(statistic, min(max(p, 0.0), 1.0))


def _normal_sf(z: float) -> float:
    """Survival function of the standard normal distribution."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


# -- How many rounds a comparison needs ---------------------------------------------
#
# The gate compares the logarithms of per-round values (ratios to the interleaved
# reference, or times): a slowdown by a factor 1 + e is then a location shift of
# log(1 + e) whatever the benchmark's scale.  The model behind the power figures is
# the usual one for a location shift: each round's log value is the window's level
# plus independent noise of standard deviation ``sigma``.  The gate flags a
# regression when (a) the Mann-Whitney U test rejects at ``alpha`` and (b) the
# difference of the medians exceeds the minimum effect, so its power is bounded by
# the power of each condition:
#
# (a) the U test has asymptotic relative efficiency 3/pi against the t-test under
#     normal noise (Lehmann, Nonparametrics, 1975): it behaves like a z-test on
#     the shift with standard error ``sigma * sqrt(1/n1 + 1/n2) * sqrt(pi/3)``;
# (b) the median of n normal values has variance ``(pi/2) sigma^2 / n``, so the
#     difference of the medians has standard error
#     ``sigma * sqrt(1/n1 + 1/n2) * sqrt(pi/2)``.
#
# The product of the two is the power figure: the events are positively
# associated (a large estimated shift helps both), so the product does not
# overstate the probability that both hold beyond the error of the normal
# approximations (against simulation: within 0.06 at 30 rounds, 0.035 above 90%
# power; tests/bench/test_bench_stats.py).  ``sigma`` is
# estimated by :func:`robust_sigma`: a few rounds hit by a neighbour must not make
# a quiet benchmark look noisy, and the estimate must be good enough for a plan.

_NORMAL = NormalDist()
#: MAD * this = standard deviation, for normal noise.
MAD_TO_SIGMA = 1.4826
#: Values further from their median than this many MAD-deviations are outliers.
CLIP = 3.5


def robust_sigma(*groups: ArrayLike) -> float:
    """Noise of ``groups`` pooled: the standard deviation of each value minus its group's
    median, leaving out values more than :data:`CLIP` robust deviations away.

    The median absolute deviation alone resists outliers but is a poor estimate (37%
    efficient for normal noise: from 30 values it is off by 20% or more a third of
    the time, and a plan or a power figure made from it inherits that); the
    standard deviation is efficient but one preempted round inflates it.  Clipping
    at 3.5 MAD-deviations keeps the efficiency (a normal value lies beyond them
    with probability 0.05%) and drops the rounds a neighbour hit.
    """
    centred = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    centred = [g - np.median(g) for g in centred if g.size]
    if not centred:
        raise ValueError("robust_sigma needs at least one non-empty group")
    pooled = np.concatenate(centred)
    mad_sigma = float(MAD_TO_SIGMA * np.median(np.abs(pooled)))
    kept = pooled[np.abs(pooled) <= CLIP * mad_sigma] if mad_sigma > 0 else pooled
    # One degree of freedom per group went into its median.
    dof = kept.size - len(centred)
    return float(np.sqrt(np.sum(kept ** 2) / dof)) if dof > 0 else mad_sigma


def shift_power(sigma: float, n1: int, n2: int, shift: float, alpha: float,
                min_shift: float) -> float:
    """Probability that the gate flags a location shift ``shift`` (in log units).

    ``sigma`` is the per-round noise, ``n1`` and ``n2`` the rounds of each side,
    ``alpha`` the two-sided level of the U test and ``min_shift`` the smallest
    difference of the medians that counts (both conditions must hold).
    """
    if n1 < 1 or n2 < 1:
        return 0.0
    if sigma <= 0.0:
        return 1.0 if shift > min_shift else 0.0
    scale = sigma * math.sqrt(1.0 / n1 + 1.0 / n2)
    z_alpha = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    test = _NORMAL.cdf(shift / (scale * math.sqrt(math.pi / 3.0)) - z_alpha)
    median = _NORMAL.cdf((shift - min_shift) / (scale * math.sqrt(math.pi / 2.0)))
    # Both must hold; the events are positively associated (a large estimated shift
    # helps both), so their product does not overstate the chance of both.
    return test * median


def rounds_for_power(sigma: float, shift: float, alpha: float, min_shift: float,
                     power: float) -> int:
    """Fewest rounds per side (equal on both) for :func:`shift_power` to reach ``power``.

    Raises ``ValueError`` when no number of rounds can (``shift <= min_shift``).
    """
    if shift <= min_shift:
        raise ValueError(f"a shift of {shift:g} never exceeds the minimum {min_shift:g}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")
    if sigma <= 0.0:
        return 1
    # Each condition alone needs power at least ``power``: a closed-form lower bound
    # (sigma * sqrt(2/n) * k is the standard error; solve shift / it >= z for n) ...
    z_alpha = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    z_power = _NORMAL.inv_cdf(power)
    test = 2.0 * (sigma * math.sqrt(math.pi / 3.0) * (z_alpha + z_power) / shift) ** 2
    median = 2.0 * (sigma * math.sqrt(math.pi / 2.0) * z_power / (shift - min_shift)) ** 2
    n = max(math.ceil(max(test, median)), 1)
    # ... from which the product of both is reached within a few doublings.
    while shift_power(sigma, n, n, shift, alpha, min_shift) < power:
        n = math.ceil(n * 1.05) + 1
    return n


# -- Process pairs: the interleaved gate's unit of evidence --------------------------
#
# Under ``--gpu-bench-against`` a benchmark is timed in R pairs of processes (one in
# each checkout).  The blocks one pair times share that pair's placement (where its
# arrays landed, its allocator's offsets), so they are not independent: the pair is
# the unit.  Each pair gives one figure (the median log ratio of its blocks); the
# change is their mean, tested with Student's t on R - 1 degrees of freedom.  The
# model: pair figures independent and normal around the true log change, with the
# between-pair standard deviation ``sigma`` (which holds the within-pair noise of a
# pair's median too).  SciPy is not a dependency: the t distribution comes from the
# regularized incomplete beta function below (the tests check it against SciPy).


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz; Numerical Recipes' ``betacf``), to about 1e-14."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        # The fraction converges fast only below this point: use the symmetry.
        return 1.0 - _incomplete_beta(1.0 - x, b, a)
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        numerator = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        for step in (numerator, -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))):
            d = 1.0 + step * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + step / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"Student's t needs df >= 1, got {df}")
    if math.isinf(t):
        return 0.0
    return min(1.0, _incomplete_beta(df / (df + t * t), df / 2.0, 0.5))


@functools.lru_cache(maxsize=1024)
def t_critical(level: float, df: int) -> float:
    """The two-sided critical value: P(|T| >= c) = ``level`` (bisection on the p-value)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > level:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, df) > level:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * high:
            break
    return (low + high) / 2.0


@dataclass(frozen=True)
class PairTest:
    """What the pairs say: the mean log change, its two-sided interval at ``level`` and
    the t test's two-sided p-value."""

    pairs: int
    mean: float
    sd: float
    low: float
    high: float
    pvalue: float
    level: float


def pair_test(figures: ArrayLike, level: float) -> PairTest:
    """Student's t on the per-pair log figures: mean, SD, the (1 - ``level``) interval
    and the two-sided p-value (the interval excludes 0 exactly when p <= level)."""
    values = np.asarray(figures, dtype=np.float64).ravel()
    if values.size < 2:
        raise ValueError(f"a pair test needs at least 2 pairs, got {values.size}")
    if not np.isfinite(values).all():
        raise ValueError("pair_test got a non-finite value")
    n = values.size
    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    se = sd / math.sqrt(n)
    if se <= 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return PairTest(n, mean, sd, mean, mean, p, level)
    half = t_critical(level, n - 1) * se
    return PairTest(n, mean, sd, mean - half, mean + half,
                    t_two_sided_p(mean / se, n - 1), level)


#: Points of the grid :func:`pair_power` integrates over.
_POWER_GRID = 2001


def normal_sf(z: np.ndarray) -> np.ndarray:
    """The standard normal's upper tail, vectorized: erfc by its Chebyshev fit
    (Numerical Recipes' ``erfcc``, fractional error below 1.2e-7 everywhere)."""
    x = np.asarray(z, dtype=np.float64) / math.sqrt(2.0)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(-a * a + poly)
    return 0.5 * np.where(x >= 0.0, erfc, 2.0 - erfc)


# A pure function of numbers, asked the same question by a look, the test's verdict,
# the run's family at the same level and the advice of an inconclusive one: computed
# once per question.
@functools.lru_cache(maxsize=4096)
def pair_power(sigma: float, pairs: int, shift: float, level: float, floor: float) -> float:
    """Probability that the pair test flags a regression of ``shift`` (log units): the
    lower end of the (1 - ``level``) interval above 0 *and* the mean above ``floor``,
    with ``pairs`` figures of between-pair SD ``sigma``.

    Exact under the normal model, by integrating over the sample SD: with
    W = sqrt(chi^2 of R - 1 df), the mean must exceed
    max(c * sigma * W / sqrt((R - 1) R), floor), a normal tail for each W.  Without
    the floor this is the non-central t's tail (the tests check it against SciPy's
    ``nct``).
    """
    if pairs < 2:
        return 0.0
    return t_power(sigma / math.sqrt(pairs), pairs - 1, shift, level, floor)


def t_power(se: float, df: int, shift: float, level: float, floor: float) -> float:
    """Probability that a t interval on ``df`` degrees of freedom whose estimate has the
    standard error ``se`` has its lower end above 0 and its estimate above ``floor``,
    for a true ``shift`` (the one-sample case is :func:`pair_power`; a two-sample test
    on pooled variance has ``se = sigma * sqrt(1/n1 + 1/n2)``, ``df = n1 + n2 - 2``)."""
    if df < 1:
        return 0.0
    if se <= 0.0:
        return 1.0 if shift > floor else 0.0
    c = t_critical(level, df)
    # W = sqrt(V), V ~ chi^2(df): density of W is w^(df-1) exp(-w^2/2) / (2^(df/2-1) G(df/2)).
    w = np.linspace(0.0, math.sqrt(df) + 12.0, _POWER_GRID)[1:]
    log_density = ((df - 1) * np.log(w) - w * w / 2.0
                   - (df / 2.0 - 1.0) * math.log(2.0) - math.lgamma(df / 2.0))
    weights = np.exp(log_density)
    weights /= weights.sum()
    bound = np.maximum(c * se * w / math.sqrt(df), floor)
    z = (bound - shift) / se
    return float(np.clip((weights * normal_sf(z)).sum(), 0.0, 1.0))


def holm_levels(pvalues: list[float], family_level: float) -> tuple[list[float], list[float]]:
    """Holm's step-down at ``family_level`` over ``pvalues``: for each, the level it is
    judged at and its Holm-adjusted p-value.

    Sorted ascending, the i-th (from 1) of m is rejected while every p up to it is at
    most family_level / (m - i + 1).  A rejected one is judged at its own step's
    level; every one after the first retained step at that step's level, so its
    interval (at that level) holds 0, as its verdict says.  The adjusted p-value is
    max over j <= i of min(1, (m - j + 1) p_(j)): rejected exactly when it is at most
    ``family_level``.  The chance of any false rejection in the family stays at most
    ``family_level`` whatever the dependence between the tests.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda k: pvalues[k])
    levels = [0.0] * m
    adjusted = [0.0] * m
    stopped: float | None = None
    running = 0.0
    for step, k in enumerate(order):
        step_level = family_level / (m - step)
        running = max(running, min(1.0, (m - step) * pvalues[k]))
        adjusted[k] = running
        if stopped is None and pvalues[k] > step_level:
            stopped = step_level
        levels[k] = step_level if stopped is None else stopped
    return levels, adjusted


def two_sample_test(old: ArrayLike, new: ArrayLike, level: float) -> PairTest:
    """Student's two-sample t on pooled variance: the mean of ``new`` minus that of
    ``old``, its (1 - ``level``) interval and two-sided p-value; ``sd`` is the pooled SD
    and ``pairs`` the values of both sides.  Both sides of a stored comparison run the
    same harness in fresh processes, so under "no change" their spreads are the same and
    pooling gives n1 + n2 - 2 degrees of freedom (Welch's would give fewer)."""
    a = np.asarray(old, dtype=np.float64).ravel()
    b = np.asarray(new, dtype=np.float64).ravel()
    if a.size < 2 or b.size < 2:
        raise ValueError(f"a two-sample test needs at least 2 values a side, got {a.size} "
                         f"and {b.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("two_sample_test got a non-finite value")
    df = a.size + b.size - 2
    mean = float(b.mean() - a.mean())
    sd = math.sqrt((float(a.var(ddof=1)) * (a.size - 1) + float(b.var(ddof=1)) * (b.size - 1))
                   / df)
    se = sd * math.sqrt(1.0 / a.size + 1.0 / b.size)
    if se <= 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return PairTest(a.size + b.size, mean, sd, mean, mean, p, level)
    half = t_critical(level, df) * se
    return PairTest(a.size + b.size, mean, sd, mean - half, mean + half,
                    t_two_sided_p(mean / se, df), level)
