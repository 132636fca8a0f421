"""The figures a verdict is computed from, each computed here and nowhere else: the
compared values of a record, the blocks and pair figures of an interleaved run, a log
ratio as a change, the smallest p-value a rank test can reach."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence

import numpy as np

from pytest_gpucheck.bench.gate.settings import GateSettings
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.stats import PairTest, mann_whitney_u, pair_test


def compared_values(record: BenchmarkRecord, settings: GateSettings,
                    relative: bool) -> list[float]:
    """What the gate compares of one record: the ratios to the reference per pair of
    rounds (:func:`pair_means`), or the fastest ``keep_fraction`` of the times."""
    return pair_means(record.ratios) if relative else settings.kept(record.samples)


def pair_means(ratios: list[float]) -> list[float]:
    """Geometric means of consecutive pairs of per-round ratios (a last odd round is left).

    The reference runs before the benchmark in even rounds and after it in odd
    ones, so neither always runs in the other's wake; but the order itself moves
    the ratio (what the previous call left in the caches: 17% between even and odd
    rounds of a 6 MiB saxpy on a CPU).  A pair holds one round of each order, so
    its mean is free of that alternation, which would otherwise count as noise
    (and make the gate ask for about twice the rounds).
    """
    logs = np.log(np.asarray(ratios[: len(ratios) // 2 * 2], dtype=np.float64))
    return [float(v) for v in np.exp(logs.reshape(-1, 2).mean(axis=1))]

def interleaved_blocks(baseline: list[float], current: list[float]) -> list[float]:
    """The log ratios candidate / baseline an interleaved comparison tests, one per block
    of two pairs of rounds.

    Round ``k`` of each side ran next to round ``k`` of the other, the pair's starting
    side first in even pairs of rounds and second in odd ones (the order alone moves a
    round: what the other side left in the caches).  A block holds one pair of each
    order, and each side's two rounds of a block follow one baseline round and one
    candidate round (:func:`~.interleave.pair_rounds`), so its mean is free of that
    alternation (as :func:`pair_means` for a reference).
    """
    count = min(len(baseline), len(current))
    ratios = [c / b for c, b in zip(current[:count], baseline[:count], strict=True)]
    return [math.log(v) for v in pair_means(ratios)]


def pair_figures(baseline: BenchmarkRecord, current: BenchmarkRecord) -> list[list[float]]:
    """The blocks' log ratios of each pair of processes, in ``replicates`` equal runs."""
    replicates = max(1, int(current.extra.get("replicates") or 1))
    per = min(len(baseline.samples), len(current.samples)) // replicates
    return [interleaved_blocks(baseline.samples[j * per:(j + 1) * per],
                               current.samples[j * per:(j + 1) * per])
            for j in range(replicates)]


def pair_figures_of(baseline: list[float], current: list[float], per: int) -> list[float]:
    """The pair figures (median block log ratio of each pair) of the rounds so far, ``per``
    rounds per side per pair."""
    return [statistics.median(blocks) for j in range(min(len(baseline), len(current)) // per)
            if (blocks := interleaved_blocks(baseline[j * per:(j + 1) * per],
                                             current[j * per:(j + 1) * per]))]



def as_change(log_ratio: float) -> float:
    """A log ratio as a change (+0.10 = 10% slower); an interval's end from few pairs at a
    strict level can be beyond any float (+inf)."""
    return math.expm1(log_ratio) if log_ratio < 700.0 else math.inf



def smallest_pvalue(n1: int, n2: int) -> float:
    """The two-sided p-value of complete separation: no sample of this size gets lower."""
    return mann_whitney_u(np.arange(n1) + n2, np.arange(n2)).pvalue


def interval_of(figures: Sequence[float], level: float) -> PairTest:
    """Student's t on the pair figures at the two-sided ``level``
    (:func:`~.stats.pair_test`), computed once per decision: the look that stops the
    pairs, the progress line after its last pair, the test's verdict and the run's
    family at the same level ask the same question of the same figures."""
    return _interval(tuple(float(v) for v in figures), float(level))


@functools.lru_cache(maxsize=1024)
def _interval(figures: tuple[float, ...], level: float) -> PairTest:
    return pair_test(figures, level)
