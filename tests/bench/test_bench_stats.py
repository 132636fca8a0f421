"""The Mann-Whitney U implementation agrees with SciPy and rejects bad input; the power
figures behind the gate's plan agree with simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_gpucheck.bench.stats import (
    mann_whitney_u,
    rank_with_ties,
    robust_sigma,
    rounds_for_power,
    shift_power,
)

scipy_stats = pytest.importorskip("scipy.stats")

# Few distinct values force ties, the case the tie correction exists for.
samples = hnp.arrays(np.float64, st.integers(1, 40),
                     elements=st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 7.25]))
continuous = hnp.arrays(np.float64, st.integers(1, 40),
                        elements=st.floats(1e-6, 1.0, allow_nan=False))


@settings(max_examples=60, deadline=None)
@given(x=st.one_of(samples, continuous), y=st.one_of(samples, continuous),
       alternative=st.sampled_from(["two-sided", "greater", "less"]))
def test_matches_scipy_asymptotic(x: np.ndarray, y: np.ndarray, alternative: str) -> None:
    combined = np.concatenate([x, y])
    if np.all(combined == combined[0]):
        return  # SciPy returns NaN there; covered by test_all_equal_samples_are_no_evidence
    expected = scipy_stats.mannwhitneyu(x, y, alternative=alternative, method="asymptotic",
                                        use_continuity=True)
    got = mann_whitney_u(x, y, alternative)
    np.testing.assert_allclose(got.statistic, expected.statistic, rtol=1e-12)
    np.testing.assert_allclose(got.pvalue, expected.pvalue, rtol=1e-9, atol=1e-15)


def test_ranks_average_ties() -> None:
    ranks, counts = rank_with_ties(np.array([3.0, 1.0, 3.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ranks, [4.0, 1.0, 4.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.sort(counts), [1, 1, 3])


def test_a_clear_shift_is_significant_and_identical_samples_are_not() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(1.0, 0.01, 30)
    assert mann_whitney_u(base * 1.1, base).pvalue < 1e-6
    assert mann_whitney_u(base * 1.1, base, "greater").pvalue < 1e-6
    assert mann_whitney_u(base * 1.1, base, "less").pvalue > 0.99
    assert mann_whitney_u(base, base.copy()).pvalue > 0.9


def test_a_test_without_tie_correction_disagrees_with_scipy() -> None:
    """A broken U (no tie correction) is caught by the SciPy comparison above."""
    x, y = np.array([1.0, 1.0, 1.0, 2.0, 2.0]), np.array([1.0, 2.0, 2.0, 2.0, 3.0])
    n1 = n2 = 5
    ranks, _ = rank_with_ties(np.concatenate([x, y]))
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    sigma = np.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)  # the broken, untied variance
    z = (max(u1, n1 * n2 - u1) - n1 * n2 / 2 - 0.5) / sigma
    broken = 2 * scipy_stats.norm.sf(z)
    expected = scipy_stats.mannwhitneyu(x, y, method="asymptotic").pvalue
    assert not np.isclose(broken, expected, rtol=1e-6)
    assert np.isclose(mann_whitney_u(x, y).pvalue, expected, rtol=1e-9)


def test_all_equal_samples_are_no_evidence() -> None:
    assert mann_whitney_u([2.0, 2.0], [2.0, 2.0, 2.0]).pvalue == 1.0


@pytest.mark.parametrize(("x", "y", "message"), [
    ([], [1.0], "non-empty"),
    ([1.0, float("nan")], [1.0], "non-finite"),
    ([1.0], [float("inf")], "non-finite"),
])
def test_bad_samples_raise(x: list[float], y: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mann_whitney_u(x, y)


def test_unknown_alternative_raises() -> None:
    with pytest.raises(ValueError, match="unknown alternative"):
        mann_whitney_u([1.0], [2.0], "bigger")


# -- The power figures behind the gate's plan ----------------------------------------

SHIFT, MIN_SHIFT, ALPHA = math.log(1.10), math.log(1.05), 1e-3


def simulated_power(sigma: float, n: int, seed: int, trials: int = 400) -> float:
    """How often the gate's two conditions hold for a SHIFT in normal noise (Monte Carlo)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        old, new = rng.normal(0.0, sigma, n), rng.normal(SHIFT, sigma, n)
        hits += (mann_whitney_u(new, old).pvalue < ALPHA
                 and float(np.median(new) - np.median(old)) > MIN_SHIFT)
    return hits / trials


@pytest.mark.parametrize(("sigma", "n"), [(0.10, 30), (0.10, 50), (0.10, 66), (0.04, 20),
                                         (0.18, 60)])
def test_the_power_figure_agrees_with_the_simulated_power(sigma: float, n: int) -> None:
    figure = shift_power(sigma, n, n, SHIFT, ALPHA, MIN_SHIFT)
    simulated = simulated_power(sigma, n, seed=n)
    # Within the Monte Carlo error of 400 trials (about 2.5%) and the normal
    # approximation of the U test at these sizes (measured: at most 0.06 at 30
    # rounds, 0.035 above 90% power).
    assert abs(figure - simulated) <= 0.08
    if figure >= 0.9:
        assert simulated >= figure - 0.05


def test_rounds_for_power_are_the_fewest_that_reach_it() -> None:
    for sigma in (0.01, 0.04, 0.10, 0.18):
        n = rounds_for_power(sigma, SHIFT, ALPHA, MIN_SHIFT, 0.95)
        assert shift_power(sigma, n, n, SHIFT, ALPHA, MIN_SHIFT) >= 0.95
        # The search steps by 5%: a tenth fewer rounds falls short.
        shorter = max(int(n * 0.9), 1)
        assert n == 1 or shift_power(sigma, shorter, shorter, SHIFT, ALPHA, MIN_SHIFT) < 0.95
    # More noise needs more rounds, quadratically.
    ratio = rounds_for_power(0.2, SHIFT, ALPHA, MIN_SHIFT, 0.9) / rounds_for_power(
        0.1, SHIFT, ALPHA, MIN_SHIFT, 0.9)
    assert 3.5 < ratio < 4.5


def test_rounds_for_power_refuses_what_no_rounds_can_do() -> None:
    with pytest.raises(ValueError, match="never exceeds the minimum"):
        rounds_for_power(0.1, 0.05, ALPHA, 0.05, 0.9)
    with pytest.raises(ValueError, match="power must be in"):
        rounds_for_power(0.1, SHIFT, ALPHA, MIN_SHIFT, 1.0)
    assert shift_power(0.0, 10, 10, SHIFT, ALPHA, MIN_SHIFT) == 1.0
    assert shift_power(0.1, 0, 10, SHIFT, ALPHA, MIN_SHIFT) == 0.0


def test_robust_sigma_is_efficient_and_ignores_preempted_rounds() -> None:
    rng = np.random.default_rng(7)
    groups = [(rng.normal(0, 0.1, 30), rng.normal(5, 0.1, 30)) for _ in range(300)]
    estimates = np.array([robust_sigma(*pair) for pair in groups])
    mad_only = np.array([1.4826 * np.median(np.abs(np.r_[a - np.median(a), b - np.median(b)]))
                         for a, b in groups])
    # Pooled over groups with different levels, and about as tight as the standard
    # deviation (relative spread 1/sqrt(2 n) = 9%), not as loose as the MAD (15%).
    assert np.median(estimates) == pytest.approx(0.1, rel=0.05)
    assert np.std(estimates / 0.1) < 0.11
    assert np.std(mad_only / 0.1) > 1.3 * np.std(estimates / 0.1)
    clean = rng.normal(0, 0.1, 60)
    hit = clean.copy()
    hit[:3] += 2.0  # three rounds a neighbour preempted
    assert robust_sigma(hit) == pytest.approx(robust_sigma(clean), rel=0.1)
    assert np.std(hit) > 3 * robust_sigma(hit)
    with pytest.raises(ValueError, match="non-empty"):
        robust_sigma([])


