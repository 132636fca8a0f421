"""The Mann-Whitney U implementation agrees with SciPy and rejects bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_gpucheck.bench.stats import mann_whitney_u, rank_with_ties

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
