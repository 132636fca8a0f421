"""Statistical checks of uniform samples: correct samples pass, broken ones are caught."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_gpucheck import randomness


def test_z_quantile_of_one_in_a_million() -> None:
    assert randomness.two_sided_z(1e-6) == pytest.approx(4.8916, abs=1e-3)


@pytest.mark.parametrize("seed", range(5))
def test_independent_uniform_samples_pass(seed: int) -> None:
    samples = np.random.default_rng(seed).random((10007, 2), dtype=np.float32)
    assert randomness.uniform_samples_problems(samples) == []


def test_shared_seed_streams_repeat_points() -> None:
    # 64 "threads" each drawing the same stream of 32 points.
    stream = np.random.default_rng(1).random((32, 2))
    samples = np.tile(stream, (64, 1))
    problems = randomness.uniform_samples_problems(samples)
    assert any("threads share a random stream" in p for p in problems)


def test_biased_samples_fail_the_pi_test() -> None:
    samples = np.random.default_rng(2).random((10007, 2)) * 0.9  # never near the corner
    assert randomness.pi_problem(samples) is not None


def test_non_uniform_coordinate_is_reported() -> None:
    samples = np.random.default_rng(3).random((10007, 2))
    samples[:, 0] = samples[:, 0] ** 2
    problem = randomness.uniformity_problem(samples[:, 0], "u")
    assert problem is not None
    assert "u is not uniform" in problem


def test_values_outside_the_unit_interval() -> None:
    samples = np.random.default_rng(4).random((100, 2))
    samples[7, 1] = 1.0
    (problem,) = randomness.uniform_samples_problems(samples)
    assert "outside [0, 1)" in problem
    assert "[7, 1]=1.0" in problem


def test_pi_bound_matches_the_binomial_standard_error() -> None:
    n = 10_000
    p = math.pi / 4
    limit = randomness.two_sided_z(1e-6) * math.sqrt(n * p * (1 - p))
    inside = int(n * p + limit) + 2  # just past the bound
    samples = np.zeros((n, 2))
    samples[inside:] = 0.99
    assert randomness.pi_problem(samples) is not None
    inside = int(n * p + limit) - 2  # just inside it
    samples = np.zeros((n, 2))
    samples[inside:] = 0.99
    assert randomness.pi_problem(samples) is None


def test_collision_probability_bound_is_small_for_suite_sizes() -> None:
    assert randomness.collision_probability(10007) < 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_a_15_bit_generator_is_caught_by_its_resolution(seed: int) -> None:
    """Estimates pi and fills the bins well, but every sample lies on a grid of 2^-15."""
    samples = np.random.default_rng(seed).integers(0, 2**15, (10007, 2)) / 2.0**15
    assert randomness.pi_problem(samples) is None
    assert randomness.uniformity_problem(samples[:, 0], "u") is None
    problems = randomness.uniform_samples_problems(samples)
    assert any("carries fewer than 20 random bits" in p for p in problems), problems


@pytest.mark.parametrize("bits", [23, 24, 53])
def test_generators_of_the_frameworks_resolutions_pass(bits: int) -> None:
    """JAX's float32 (23 bits), the others' float32 (24) and float64 (53) generators."""
    rng = np.random.default_rng(bits)
    samples = (rng.integers(0, 2**bits, (10007, 2), dtype=np.int64) / 2.0**bits)
    assert randomness.resolution_problem(samples[:, 0], "u") is None
    assert randomness.uniform_samples_problems(samples) == []


def test_correlated_successive_draws_are_caught() -> None:
    """Each draw close to the last one: uniform marginals, but dependent pairs."""
    rng = np.random.default_rng(5)
    steps = rng.random(2 * 10007) * 0.1
    stream = np.cumsum(steps) % 1.0
    samples = stream.reshape(-1, 2)
    assert randomness.uniformity_problem(samples[:, 0], "u") is None
    problems = randomness.uniform_samples_problems(samples)
    assert any("are not independent" in p for p in problems), problems
