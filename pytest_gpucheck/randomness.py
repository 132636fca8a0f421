"""Statistical checks of random samples with stated false-alarm rates.

``monte_carlo_pi`` has no exact expected output: its samples are random.  A
correct kernel is accepted, and a broken one rejected, by tests whose
probability of failing a *correct* kernel is stated and small:

* **pi**: the number of points inside the quarter disc is
  Binomial(n, pi/4); the estimate must lie within ``z`` standard errors of
  pi, with ``z`` the two-sided normal quantile of the false-alarm rate.
* **uniformity**: per coordinate, counts in 16 equal bins are each
  Binomial(n, 1/16); each count must lie within the Bonferroni-corrected
  ``z`` (so the whole coordinate test has the stated rate).
* **independent streams**: with at least 24 random bits per coordinate, two
  of ``n`` independent points coincide with probability at most
  ``n^2 / 2 / 2^48`` (about 2e-7 for n = 10^4), so *any* repeated point is
  reported.  Threads that share one seed repeat each other's points.
* **resolution** (the generator's quality, which the estimate cannot show):
  a coordinate must carry at least ``MIN_BITS`` (20) random bits, so each of
  the ``LOW_BITS`` lowest bits of ``floor(value * 2^20)`` is 1 with
  probability 1/2: a binomial test per bit, Bonferroni-corrected.  Float32
  generators give 23 (JAX) or 24 bits, float64 ones 52 or 53; a 15-bit
  generator (C's ``rand()``) leaves those bits 0 and still estimates pi well.
* **consecutive pairs**: the points ``(u_i, v_i)`` and the successive draws
  ``(u_i, u_{i+1})`` must fill the 4 x 4 cells of the unit square evenly
  (per-cell binomial test like the uniformity test's), which a generator whose
  next value depends visibly on the last one does not.

Each test has false-alarm rate ``alpha`` (default 1e-6); the seven together
(pi, two coordinates, two resolutions, two pairings) at most ``7 * alpha``
plus the collision probability per example.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

DEFAULT_ALPHA = 1e-6
BINS = 16
#: Random bits per coordinate assumed by the collision bound (float32 generators give 24).
RESOLUTION_BITS = 24
#: Random bits per coordinate the resolution test asks for: fewer than any float32 generator
#: of the bundled frameworks gives (JAX: 23), more than a 15-bit generator's.
MIN_BITS = 20
#: How many of the lowest of those bits the resolution test checks.
LOW_BITS = 4
#: Cells per axis of the consecutive-pairs test (4 x 4 = BINS cells, so each cell's count is
#: as well approximated by a normal as the uniformity test's bins).
PAIR_CELLS = 4


def two_sided_z(alpha: float) -> float:
    """``z`` with ``P(|Z| > z) = alpha`` for a standard normal ``Z``."""
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def collision_probability(n: int, bits: int = RESOLUTION_BITS) -> float:
    """Upper bound on P(two of ``n`` independent uniform points coincide)."""
    return min(1.0, n * (n - 1) / 2.0 / 2.0 ** (2 * bits))


def pi_problem(samples: np.ndarray, alpha: float = DEFAULT_ALPHA) -> str | None:
    """Binomial test of the quarter-disc count; None when consistent with pi."""
    n = samples.shape[0]
    u = samples[:, 0].astype(np.float64)
    v = samples[:, 1].astype(np.float64)
    inside = int(np.count_nonzero(u * u + v * v < 1.0))
    p = math.pi / 4.0
    z = (inside - n * p) / math.sqrt(n * p * (1.0 - p))
    limit = two_sided_z(alpha)
    if abs(z) <= limit:
        return None
    return (f"pi estimate {4.0 * inside / n:.5f} from {n} samples is {z:+.2f} standard errors "
            f"from pi, but should be within {limit:.2f} (false-alarm rate {alpha:g})")


def _worst_cell(counts: np.ndarray, alpha: float) -> tuple[int, float, float] | None:
    """Per-cell binomial test of ``counts`` of equally likely cells (Bonferroni-corrected):
    None when every count is within the bound, else (cell, its z, the bound)."""
    n = int(counts.sum())
    p = 1.0 / counts.size
    z = (counts - n * p) / math.sqrt(n * p * (1.0 - p))
    limit = two_sided_z(alpha / counts.size)
    worst = int(np.argmax(np.abs(z)))
    return None if abs(z[worst]) <= limit else (worst, float(z[worst]), limit)


def _cell_of(values: np.ndarray, cells: int) -> np.ndarray:
    """Index of the equal cell of [0, 1) that each value falls in."""
    return np.minimum((values.astype(np.float64) * cells).astype(np.int64), cells - 1)


def uniformity_problem(values: np.ndarray, name: str,
                       alpha: float = DEFAULT_ALPHA) -> str | None:
    """Per-bin binomial test of one coordinate over ``BINS`` equal bins of [0, 1)."""
    counts = np.bincount(_cell_of(values, BINS), minlength=BINS)
    found = _worst_cell(counts, alpha) if values.size else None
    if found is None:
        return None
    worst, z, limit = found
    return (f"{name} is not uniform: bin [{worst / BINS:g}, {(worst + 1) / BINS:g}) holds "
            f"{counts[worst]} of {values.size} samples ({z:+.2f} standard errors), but should "
            f"be within {limit:.2f} (false-alarm rate {alpha:g})")


def resolution_problem(values: np.ndarray, name: str,
                       alpha: float = DEFAULT_ALPHA) -> str | None:
    """Binomial test of each of the ``LOW_BITS`` lowest bits of ``floor(value * 2^MIN_BITS)``:
    None when ``values`` look like they carry at least ``MIN_BITS`` random bits."""
    n = values.size
    if n == 0:
        return None
    k = np.floor(values.astype(np.float64) * 2.0**MIN_BITS).astype(np.int64)
    limit = two_sided_z(alpha / LOW_BITS)
    for bit in range(LOW_BITS):
        ones = int(np.count_nonzero((k >> bit) & 1))
        z = (ones - n / 2.0) / math.sqrt(n / 4.0)
        if abs(z) > limit:
            return (f"{name} carries fewer than {MIN_BITS} random bits: its bit "
                    f"{MIN_BITS - bit} after the binary point is 1 in {ones} of {n} samples "
                    f"({z:+.2f} standard errors), but should be within {limit:.2f} "
                    f"(false-alarm rate {alpha:g}); a generator of few bits (C's rand() has "
                    "15) puts every sample on a coarse grid")
    return None


def pairs_problem(first: np.ndarray, second: np.ndarray, name: str,
                  alpha: float = DEFAULT_ALPHA) -> str | None:
    """Per-cell binomial test of the pairs ``(first[i], second[i])`` over the
    ``PAIR_CELLS x PAIR_CELLS`` equal cells of the unit square."""
    cells = PAIR_CELLS * PAIR_CELLS
    counts = np.bincount(_cell_of(first, PAIR_CELLS) * PAIR_CELLS + _cell_of(second, PAIR_CELLS),
                         minlength=cells)
    found = _worst_cell(counts, alpha) if first.size else None
    if found is None:
        return None
    worst, z, limit = found
    row, column = (cell / PAIR_CELLS for cell in divmod(worst, PAIR_CELLS))
    step = 1.0 / PAIR_CELLS
    return (f"{name} are not independent: the cell [{row:g}, {row + step:g}) x "
            f"[{column:g}, {column + step:g}) holds {counts[worst]} of {first.size} pairs "
            f"({z:+.2f} standard errors), but should be within {limit:.2f} "
            f"(false-alarm rate {alpha:g})")


def repeated_points_problem(samples: np.ndarray) -> str | None:
    """Report repeated points: threads sharing one random stream produce them."""
    n = samples.shape[0]
    rows = np.ascontiguousarray(samples.astype(np.float64))
    unique, counts = np.unique(rows, axis=0, return_counts=True)
    repeats = n - unique.shape[0]
    if repeats == 0:
        return None
    value = unique[int(np.argmax(counts))]
    where = np.flatnonzero(np.all(rows == value, axis=1))[:5]
    return (f"{repeats} of {n} points repeat earlier ones (e.g. ({float(value[0])!r}, "
            f"{float(value[1])!r}) "
            f"at rows {', '.join(str(int(i)) for i in where)}): threads share a random stream; "
            f"independent streams repeat a point with probability <= "
            f"{collision_probability(n):.1e}")


def uniform_samples_problems(samples: np.ndarray, alpha: float = DEFAULT_ALPHA) -> list[str]:
    """Every statistical problem of ``(n, 2)`` samples meant to be i.i.d. uniform in [0, 1)^2."""
    if samples.ndim != 2 or samples.shape[1] != 2:
        return [f"samples.shape={samples.shape}, but should be (n, 2)"]
    if samples.shape[0] == 0:
        return []
    finite = np.isfinite(samples)
    inside = finite & (samples >= 0) & (samples < 1)
    if not np.all(inside):
        bad = np.argwhere(~inside)[:5]
        shown = ", ".join(f"[{i}, {j}]={float(samples[i, j])!r}" for i, j in bad)
        return [f"{int(np.count_nonzero(~inside))} sample coordinates are outside [0, 1) "
                f"(first: {shown}), but every sample should lie in [0, 1)^2"]
    problems = [
        repeated_points_problem(samples),
        pi_problem(samples, alpha),
        uniformity_problem(samples[:, 0], "u = samples[:, 0]", alpha),
        uniformity_problem(samples[:, 1], "v = samples[:, 1]", alpha),
        resolution_problem(samples[:, 0], "u = samples[:, 0]", alpha),
        resolution_problem(samples[:, 1], "v = samples[:, 1]", alpha),
        pairs_problem(samples[:, 0], samples[:, 1], "the points (u[i], v[i])", alpha),
        pairs_problem(samples[:-1, 0], samples[1:, 0], "successive draws (u[i], u[i+1])",
                      alpha),
    ]
    return [p for p in problems if p]


__all__ = [
    "DEFAULT_ALPHA",
    "collision_probability",
    "pairs_problem",
    "pi_problem",
    "repeated_points_problem",
    "resolution_problem",
    "two_sided_z",
    "uniform_samples_problems",
    "uniformity_problem",
]
