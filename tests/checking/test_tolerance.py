"""The derived tolerances, at and just past each bound."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_gpucheck.checking import tolerance as tol


def test_gamma_matches_its_definition() -> None:
    u = 2.0**-24
    assert tol.unit_roundoff(np.float32) == u
    assert tol.gamma(10, np.float32) == pytest.approx(10 * u / (1 - 10 * u), rel=1e-15)
    assert tol.gamma(2**24, np.float32) == float("inf")  # n*u >= 1: no bound


def test_significand_bits() -> None:
    assert tol.significand_bits(np.float32) == 24
    assert tol.significand_bits(np.float64) == 53


def test_integer_valued_sum_below_two_to_the_24_is_exact() -> None:
    x = np.full(16, 2.0**20, dtype=np.float32)  # sum |x| = 2**24 exactly: still exact
    rule = tol.sum_rule(x, np.float32)
    assert rule.kind == "exact"
    expected = np.array([2.0**24], dtype=np.float32)
    assert not rule.mismatches(expected, expected).any()
    # A dropped element changes the result by 2**20: caught.
    assert rule.mismatches(np.array([2.0**24 - 2.0**20], np.float32), expected).all()


def test_integer_valued_sum_past_two_to_the_24_gets_a_bound() -> None:
    x = np.full(16, 2.0**20, dtype=np.float32)
    x[0] += 1.0  # sum |x| = 2**24 + 1: partial sums may round, so no exactness claim
    rule = tol.sum_rule(x, np.float32)
    assert rule.kind == "bound"
    assert "Higham" in rule.reason


def test_float64_uses_two_to_the_53() -> None:
    assert tol.sum_rule(np.array([2.0**52, 2.0**52]), np.float64).kind == "exact"
    assert tol.sum_rule(np.array([2.0**52, 2.0**52 + 2.0]), np.float64).kind == "bound"


def test_higham_bound_at_and_just_past() -> None:
    x = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    rule = tol.sum_rule(x, np.float32)
    bound = tol.gamma(x.size + 2, np.float32) * float(np.sum(np.abs(x.astype(np.float64))))
    assert float(rule.bound) == pytest.approx(bound, rel=1e-12)
    exact = np.array([np.sum(x.astype(np.float64))])
    at = np.array([exact[0] + bound * (1 - 1e-9)])
    past = np.array([exact[0] + bound * (1 + 1e-6)])
    assert not rule.mismatches(at, exact).any()
    assert rule.mismatches(past, exact).all()


def test_integer_sums_are_exact() -> None:
    rule = tol.sum_rule(np.array([1, 2, 3], np.int32), np.int32)
    assert rule.kind == "exact"
    assert rule.mismatches(np.array([7]), np.array([6])).all()


def test_ulp_rule_at_and_just_past() -> None:
    rule = tol.within_ulps(np.float32, 4, "test")
    expected = np.array([1.5], dtype=np.float32)
    four_up = np.array([expected[0]], dtype=np.float32)
    for _ in range(4):
        four_up = np.nextafter(four_up, np.float32(np.inf))
    five_up = np.nextafter(four_up, np.float32(np.inf))
    assert tol.ulp_error(four_up, expected)[0] == pytest.approx(4.0)
    assert not rule.mismatches(four_up, expected).any()
    assert rule.mismatches(five_up, expected).all()


def test_ulp_rule_accepts_flush_to_zero_of_subnormal_results() -> None:
    rule = tol.within_ulps(np.float32, 4, "test")
    subnormal = np.array([1e-40], dtype=np.float32)
    assert not rule.mismatches(np.zeros(1, np.float32), subnormal).any()
    # ... but not an error of more than the smallest normal number.
    assert rule.mismatches(np.array([3e-38], np.float32), subnormal).all()


def test_ulp_rule_rejects_nan_and_accepts_matching_infinities() -> None:
    rule = tol.within_ulps(np.float64, 4, "test")
    expected = np.array([1.0, np.inf])
    assert rule.mismatches(np.array([np.nan, np.inf]), expected).tolist() == [True, False]


def test_ulp_rule_is_exact_for_integers() -> None:
    assert tol.within_ulps(np.int64, 4, "test").kind == "exact"


def test_terms_rule_at_and_just_past() -> None:
    terms = np.array([1.0, 10.0])
    rule = tol.terms_rule(terms, 2, np.float32, what="saxpy")
    bound = tol.gamma(3, np.float32) * terms
    expected = np.array([0.0, 0.0])
    assert not rule.mismatches(bound * (1 - 1e-9), expected).any()
    assert rule.mismatches(bound * (1 + 1e-6), expected).all()


def test_matmul_rule_exact_for_small_integers_else_per_element_bound() -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    assert tol.matmul_rule(a, a, np.float32).kind == "exact"
    b = a / 3
    rule = tol.matmul_rule(b, b, np.float32)
    assert rule.kind == "bound"
    expected = np.abs(b.astype(np.float64)) @ np.abs(b.astype(np.float64))
    np.testing.assert_allclose(rule.bound, tol.gamma(4, np.float32) * expected)


def test_exact_rule_matches_nan_with_nan() -> None:
    rule = tol.exact("copy")
    assert not rule.mismatches(np.array([np.nan]), np.array([np.nan])).any()
    assert rule.mismatches(np.array([np.nan]), np.array([1.0])).all()


def test_bounds_allow_flush_to_zero_of_underflowing_products() -> None:
    # Products of 1e-200 and 1e-110 underflow; XLA and GPUs flush them to zero.
    a = np.full((1, 4), 1e-200)
    b = np.full((4, 1), -1e-110)
    rule = tol.matmul_rule(a, b, np.float64)
    expected = a @ b  # a subnormal result on the host
    assert not rule.mismatches(np.zeros((1, 1)), expected).any()
    # ... but a wrong result of normal size is still caught.
    assert rule.mismatches(np.array([[1e-300]]), expected).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ulp_rule_at_the_top_of_the_range_rejects_sign_flips_quietly(dtype: type) -> None:
    """The spacing above the largest float is inf; a rule built on it accepted anything."""
    import warnings

    largest = np.finfo(dtype).max
    got = np.array([largest, np.inf, largest], dtype=dtype)
    want = np.array([-largest, -np.inf, np.nextafter(largest, dtype(0))], dtype=dtype)
    rule = tol.within_ulps(dtype, 4, "test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from the harness's own arithmetic
        assert list(rule.mismatches(got, want)) == [True, True, False]
        assert (tol.ulp_error(got, want)[:2] > 1e6).all()


def test_a_non_finite_reference_is_matched_exactly_even_by_an_infinite_bound() -> None:
    """A bound built from infinite terms is infinite: before non-finite references were
    matched exactly, it accepted any finite result there (a saturating saxpy that clamps
    -1.5 * inf to -finfo.max passed the sweep's ``x: +inf``)."""
    from pytest_gpucheck.checking.kernel_rules import rule_for

    largest = np.finfo(np.float32).max
    x = np.array([np.inf, 1.0, np.nan, 2.0], np.float32)
    y = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    alpha = np.float32(-1.5)
    expected = alpha * x + y
    rule = rule_for("saxpy")({"alpha": alpha, "x": x, "y": y}, expected)
    assert float(rule.bound[0]) == float("inf")  # the weakness: no finite bound there
    saturated = np.clip(expected, -largest, largest)
    assert rule.mismatches(saturated, expected).tolist() == [True, False, False, False]
    assert rule.mismatches(expected, expected).tolist() == [False] * 4
    wrong_sign = expected.copy()
    wrong_sign[0] = np.inf
    nan_for_inf = expected.copy()
    nan_for_inf[0] = np.nan
    number_for_nan = expected.copy()
    number_for_nan[2] = 0.0
    for got in (wrong_sign, nan_for_inf, number_for_nan):
        assert rule.mismatches(got, expected).any(), got


def test_every_rule_kind_matches_non_finite_references_exactly_unless_it_says_why() -> None:
    want = np.array([np.inf, -np.inf, np.nan, 1.0])
    got = np.array([1e300, -1e300, 5.0, 1.0])
    infinite = tol.Tolerance("bound", "test", bound=np.array(np.inf))
    rules = [infinite, tol.within_ulps(np.float64, 4, "test"), tol.exact("test")]
    for rule in rules:
        assert rule.mismatches(got, want).tolist() == [True, True, True, False], rule
    waived = dataclasses.replace(infinite, nonfinite_free="the contract leaves overflow open")
    assert waived.mismatches(got, want).tolist() == [False, False, True, False]
