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


Independence (each sample independent of the others), which the tests above
see only in part; the anchor is the serial family of TestU01's SmallCrush.
All three read the *stream* ``s = samples.reshape(-1)`` (``u[0], v[0], u[1],
v[1], ...``, the order a generator hands out its draws):

* **serial correlation**: for every lag ``L`` from 1 to ``2n - MIN_PAIRS``,
  ``sum((s[i] - 1/2) (s[i+L] - 1/2))`` over the ``M = 2n - L`` pairs has mean 0
  and standard deviation ``sqrt(M) / 12`` exactly (the products are
  uncorrelated); each lag's ``z`` must lie within the two-sided bound of
  ``alpha`` divided by the number of lags (Bonferroni), computed for every lag
  at once by FFT.  Samples that share random numbers (``v[i] == u[i+1]``),
  streams offset from each other by a few draws, and a period shorter than the
  stream all put a run of equal pairs at one lag.
* **coordinates**: ``u`` and ``v`` uncorrelated (lag 0 between the columns).
* **overlapping pairs** (Good's serial test, SmallCrush's ``smarsa_SerialOver``
  in its plainest form): the ``2n`` circular pairs ``(s[i], s[i+1])`` counted in
  ``SERIAL_CELLS x SERIAL_CELLS`` cells; ``psi2(pairs) - psi2(singles)`` is
  chi-square with ``d^2 - d`` (56) degrees of freedom, and must lie below its
  ``1 - alpha`` quantile.  It sees dependence that is not linear, which the
  correlations miss.

Each test has false-alarm rate ``alpha`` (default 1e-6); the ten together
(pi, two coordinates, two resolutions, two pairings, the three of
independence) at most ``10 * alpha`` plus the collision probability per
example.
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
#: Fewest pairs a lag of the serial-correlation test sums over: the normal approximation of
#: its sum is then good far into the tail (the products' excess kurtosis is 0.24 / M).
MIN_PAIRS = 256
#: Cells per axis of the overlapping-pairs test: 8 x 8, so 56 degrees of freedom (even: the
#: chi-square tail has a closed form) and 32 pairs per cell at the smallest suite size.
SERIAL_CELLS = 8
#: The independence tests name this clause of the contract in their messages.
INDEPENDENCE = "samples are not independent of each other"


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


def serial_correlation_z(stream: np.ndarray) -> np.ndarray:
    """``z`` of the serial correlation of ``stream`` (last axis) at every lag from 1 to
    ``N - MIN_PAIRS``: entry ``L - 1`` is ``sum((s[i] - 1/2)(s[i+L] - 1/2)) / (sqrt(N - L) / 12)``,
    standard normal for independent uniform draws.  Leading axes are a batch."""
    x = np.asarray(stream, dtype=np.float64) - 0.5
    n = x.shape[-1]
    lags = n - MIN_PAIRS
    if lags < 1:
        return np.zeros((*x.shape[:-1], 0))
    size = 1 << (2 * n - 1).bit_length()  # zero padding: a linear, not circular, correlation
    spectrum = np.fft.rfft(x, size)
    products = np.fft.irfft(spectrum * np.conj(spectrum), size)[..., 1:lags + 1]
    pairs = n - np.arange(1, lags + 1)
    result: np.ndarray = products / (np.sqrt(pairs) / 12.0)
    return result


def serial_correlation_problem(stream: np.ndarray, alpha: float = DEFAULT_ALPHA) -> str | None:
    """Every lag of :func:`serial_correlation_z` within the Bonferroni bound, or the worst lag."""
    z = serial_correlation_z(stream)
    if z.size == 0:
        return None
    limit = two_sided_z(alpha / z.size)
    worst = int(np.argmax(np.abs(z)))
    if abs(z[worst]) <= limit:
        return None
    lag, pairs = worst + 1, stream.size - worst - 1
    r = float(z[worst]) / math.sqrt(pairs)
    return (f"{INDEPENDENCE}: draws s[i] and s[i+{lag}] of the stream s = out.reshape(-1) "
            f"(u[0], v[0], u[1], ...) have correlation {r:+.3f} over {pairs} pairs "
            f"({float(z[worst]):+.2f} standard errors), but every lag from 1 to {z.size} should "
            f"be within {limit:.2f} (false-alarm rate {alpha:g} over all lags): samples that "
            "share random numbers, streams offset from each other or a period shorter than "
            "the stream repeat draws at a fixed distance")


def coordinate_correlation_z(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``z`` of ``sum((u - 1/2)(v - 1/2))`` over the last axis (standard normal when ``u`` and
    ``v`` are independent and uniform)."""
    x = np.asarray(u, dtype=np.float64) - 0.5
    y = np.asarray(v, dtype=np.float64) - 0.5
    result: np.ndarray = np.sum(x * y, axis=-1) / (math.sqrt(max(x.shape[-1], 1)) / 12.0)
    return result


def coordinate_correlation_problem(u: np.ndarray, v: np.ndarray,
                                   alpha: float = DEFAULT_ALPHA) -> str | None:
    """``u`` and ``v`` uncorrelated within the two-sided bound, or the problem."""
    if u.size == 0:
        return None
    z = float(coordinate_correlation_z(u, v))
    limit = two_sided_z(alpha)
    if abs(z) <= limit:
        return None
    return (f"{INDEPENDENCE}: the coordinates u = out[:, 0] and v = out[:, 1] have correlation "
            f"{z / math.sqrt(u.size):+.3f} over {u.size} samples ({z:+.2f} standard errors), but "
            f"should be within {limit:.2f} (false-alarm rate {alpha:g})")


def overlapping_pairs_statistic(stream: np.ndarray, cells: int = SERIAL_CELLS) -> np.ndarray:
    """Good's serial statistic of ``stream`` (last axis): ``psi2`` of the circular overlapping
    pairs ``(s[i], s[i+1 mod N])`` over ``cells x cells`` cells minus ``psi2`` of the single
    draws over ``cells`` cells; chi-square with ``cells^2 - cells`` degrees of freedom for
    independent uniform draws.  Leading axes are a batch."""
    index = _cell_of(np.asarray(stream), cells)
    n = index.shape[-1]
    pairs = index * cells + np.roll(index, -1, axis=-1)
    batch = int(np.prod(index.shape[:-1], dtype=np.int64))
    offsets = (np.arange(batch) * cells * cells).reshape((*index.shape[:-1], 1))
    counts2 = np.bincount((pairs + offsets).reshape(-1), minlength=batch * cells * cells)
    counts1 = counts2.reshape((*index.shape[:-1], cells, cells)).sum(axis=-1)
    counts2 = counts2.reshape((*index.shape[:-1], cells * cells))
    psi2 = np.sum((counts2 - n / cells**2) ** 2, axis=-1) / (n / cells**2)
    psi1 = np.sum((counts1 - n / cells) ** 2, axis=-1) / (n / cells)
    result: np.ndarray = psi2 - psi1
    return result


def chi2_survival(x: float, dof: int) -> float:
    """``P(X > x)`` for ``X`` chi-square with an even number ``dof`` of degrees of freedom:
    ``exp(-x/2) sum_{j < dof/2} (x/2)^j / j!`` (a closed form, no special functions)."""
    if dof % 2 or dof <= 0:
        raise ValueError(f"dof must be even and positive, got {dof}")
    half, term, total = x / 2.0, 1.0, 1.0
    for j in range(1, dof // 2):
        term *= half / j
        total += term
    return math.exp(-half) * total


def chi2_quantile(alpha: float, dof: int) -> float:
    """The ``x`` with ``chi2_survival(x, dof) = alpha`` (bisection)."""
    low, high = 0.0, dof + 100.0 * math.sqrt(2.0 * dof)
    for _ in range(200):
        middle = (low + high) / 2.0
        low, high = (middle, high) if chi2_survival(middle, dof) > alpha else (low, middle)
    return high


def overlapping_pairs_problem(stream: np.ndarray, alpha: float = DEFAULT_ALPHA) -> str | None:
    """Good's serial test of the flattened stream (:func:`overlapping_pairs_statistic`)."""
    cells = SERIAL_CELLS
    if stream.size < 5 * cells * cells:  # too few pairs per cell for the chi-square law
        return None
    dof = cells * cells - cells
    statistic = float(overlapping_pairs_statistic(stream))
    limit = chi2_quantile(alpha, dof)
    if statistic <= limit:
        return None
    return (f"{INDEPENDENCE}: the overlapping pairs (s[i], s[i+1]) of the stream "
            f"s = out.reshape(-1) fill the {cells} x {cells} cells of the unit square unevenly: "
            f"Good's serial statistic is {statistic:.1f}, but should be below {limit:.1f} "
            f"(chi-square with {dof} degrees of freedom, false-alarm rate {alpha:g})")


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
    return (f"{INDEPENDENCE}: {repeats} of {n} points repeat earlier ones (e.g. "
            f"({float(value[0])!r}, {float(value[1])!r}) "
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
    stream = samples.reshape(-1)
    problems += [
        serial_correlation_problem(stream, alpha),
        coordinate_correlation_problem(samples[:, 0], samples[:, 1], alpha),
        overlapping_pairs_problem(stream, alpha),
    ]
    return [p for p in problems if p]


__all__ = [
    "DEFAULT_ALPHA",
    "INDEPENDENCE",
    "chi2_quantile",
    "chi2_survival",
    "collision_probability",
    "coordinate_correlation_problem",
    "coordinate_correlation_z",
    "overlapping_pairs_problem",
    "overlapping_pairs_statistic",
    "pairs_problem",
    "pi_problem",
    "repeated_points_problem",
    "resolution_problem",
    "serial_correlation_problem",
    "serial_correlation_z",
    "two_sided_z",
    "uniform_samples_problems",
    "uniformity_problem",
]
