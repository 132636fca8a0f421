"""The interleaved gate's sequential looks: more pairs until it decides, within a budget.

``--gpu-bench-against`` judges a benchmark after its first ``gpu_bench_replicates``
pairs of processes (the first *look*).  Where that look cannot decide (neither a
regression nor an improvement, and too little power to call it unchanged), more
pairs are timed, :attr:`LookSchedule.step` at a time, and the benchmark is judged
again, until a look decides, the schedule's last look is reached, or the next look
would not fit the benchmark's time budget (``gpu_bench_budget``, seconds per
benchmark).

**Why the error rates hold.**  Looking at the data again and again inflates the
false-alarm rate when each look is judged at the full level.  Here each look ``k``
spends a fixed share ``w_k`` of the benchmark's level (Bonferroni over looks): half
at the first look, the other half split evenly over the later ones, the shares
summing to 1.  A look at level ``w_k * level`` flags identical code with probability
at most ``w_k * level``, so the chance that *any* look does is at most
``sum(w_k) * level = level``, however the looks depend on each other and whatever
made the run stop (a decision, the budget).  The verdict reports the last look,
at that look's share of the level, with the p-value ``min(1, p / w_k)``: under
identical code ``P(p / w_L <= u) <= sum_k P(p_k <= u w_k) <= u`` for the look ``L``
it stopped at, so Holm's method over the run's benchmarks (:func:`~.gate.judge_family`)
keeps the family-wise level with it.  Shares fixed in advance (not spent by the
elapsed information, as O'Brien-Fleming's or Pocock's boundaries are) are
conservative where the looks are correlated, and need no assumption about how
many looks a run takes; the first look, which decides most benchmarks, keeps half
the level (``tests/bench/test_bench_sequential.py`` holds the whole rule to the level
and to the power by simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_gpucheck.bench.stats import pair_power

#: Pairs added per later look, as a fraction of the first look's pairs (at least 2).
STEP_FRACTION = 0.5
#: The most looks per benchmark, the first included (10, 15, 20, 25, 30 pairs at the
#: default 10 pairs): beyond that a benchmark is too noisy for the runner.
MAX_LOOKS = 5
#: The share of the level the first look spends (the later looks share the rest).
FIRST_SHARE = 0.5


@dataclass(frozen=True)
class LookSchedule:
    """When a benchmark is judged: after ``first`` pairs, then every ``step`` more, at
    most ``looks`` times; each look spends its :meth:`share` of the level."""

    first: int
    step: int
    looks: int = MAX_LOOKS

    @classmethod
    def for_pairs(cls, first: int) -> LookSchedule:
        """The default schedule after ``first`` pairs: steps of half as many (at least 2)."""
        return cls(first, max(2, math.ceil(first * STEP_FRACTION)), MAX_LOOKS)

    def pairs_at(self, look: int) -> int:
        """Pairs done at look ``look`` (1 = the first)."""
        return self.first + (look - 1) * self.step

    def share(self, look: int) -> float:
        """The share of the benchmark's level spent at look ``look`` (1-based); the shares
        of all :attr:`looks` sum to 1."""
        if not 1 <= look <= self.looks:
            raise ValueError(f"look {look} outside 1..{self.looks}")
        if self.looks == 1:
            return 1.0
        return FIRST_SHARE if look == 1 else (1.0 - FIRST_SHARE) / (self.looks - 1)

    def as_dict(self) -> dict[str, int]:
        return {"first": self.first, "step": self.step, "max_looks": self.looks}


def sequential_pvalue(pvalue: float, share: float) -> float:
    """The p-value of a look that spends ``share`` of the level: ``min(1, p / share)``
    (at most ``u`` with probability at most ``u`` under identical code, whichever look
    the run stopped at)."""
    return min(1.0, pvalue / share)


def more_pairs_needed(sd: float, pairs: int, shift: float, level: float, floor: float,
                      power: float, cap: int = 10_000) -> int | None:
    """How many more pairs a look at two-sided ``level`` needs to reach ``power`` against
    ``shift`` (log units) at the between-pair SD ``sd`` seen so far (:func:`pair_power`);
    ``None`` when even ``cap`` pairs would not (a shift at or below the floor)."""
    if shift <= floor:
        return None
    if pair_power(sd, pairs, shift, level, floor) >= power:
        return 0
    low, high = pairs, pairs
    # Doubling, then bisection: the power grows with the pairs.
    while pair_power(sd, high, shift, level, floor) < power:
        low, high = high, high * 2
        if high > cap:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if pair_power(sd, middle, shift, level, floor) >= power:
            high = middle
        else:
            low = middle
    return high - pairs
