"""Timing beside the baseline checkout (``--gpu-bench-against``): a benchmark's rounds
timed in pairs of processes, one in each checkout, in turns, look after look
(:mod:`.sequential`) until a look decides, the schedule ends or the budget would be
spent; the :class:`~.fixture.Timing` of the interleaved gate.

The pairs, the level, the look's decision and the progress line are the benchmark's
:class:`~.run.GateRun`'s; the protocol with each process is :mod:`.interleave`'s.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from pytest_gpucheck.bench.environment import environment_from_dict
from pytest_gpucheck.bench.gate import pair_figures_of
from pytest_gpucheck.bench.interleave import (
    SIDES,
    first_side,
    pinning_words,
    shared_cpu,
    time_pair,
)
from pytest_gpucheck.bench.peers import BaselinePeer, PeerError, PeerStart, stopped_by_sigterm
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.sequential import LookSchedule
from pytest_gpucheck.bench.settings import MIN_BLOCKS_PER_PAIR
from pytest_gpucheck.bench.timed import (
    Prepared,
    Timed,
    Timing,
    copy_ceiling_at_size,
    next_look_fits,
    replay_and_call,
)

if TYPE_CHECKING:
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.run import GateRun

#: Shortest round of an interleaved comparison (``--gpu-bench-against``).  Handing the
#: CPU (or the GPU) to the other side costs the next round some time (caches, TLBs,
#: the clock's ramp refill), and the two sides need not pay it alike; a round of many
#: calls, after an untimed one (``rewarm``), makes that cost small against the round.
INTERLEAVED_ROUND_SECONDS = 0.01

Pair = tuple[BaselinePeer, BaselinePeer]


def start_replicate(run: GateRun, peer: BaselinePeer, iterations: int,
                    side: str) -> dict[str, Any] | None:
    """Ask ``peer`` to run this test up to its benchmark: its facts when ready, else
    ``None`` (the baseline's reason went to the run).  A process that cannot start or
    died, a candidate that cannot time its own test, and a baseline that imported the
    candidate's code fail the test: no verdict is possible."""
    try:
        start = peer.begin(run.name, iterations)
    except PeerError as exc:
        pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
    return accept_start(run, peer, start, side)


def begin_together(run: GateRun, peers: dict[str, BaselinePeer], order: tuple[str, ...],
                   iterations: int) -> dict[str, PeerStart]:
    """Ask both processes of a pair (in ``order``) to run this test up to its benchmark
    before reading either answer, so the two set it up at the same time.

    One after the other, the side that set up first waited while the other set up, and
    was slower for the whole pair: on identical numba-cpu code the pairs the baseline
    set up first read about 11% below the others (numbagg's ``move_mean``); with the
    baseline always set up first that contrast was gone and the baseline read 3%
    slower, and with both asked at once there is none (issue 43,
    docs/benchmark-accuracy.md).  Balanced over the pairs it left the change, but it
    widened the between-pair spread the interval is made of."""
    try:
        asked = {side: peers[side].ask(run.name, iterations) for side in order}
        return {side: asked[side] or peers[side].answer(run.name) for side in order}
    except PeerError as exc:
        pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)


def accept_start(run: GateRun, peer: BaselinePeer, start: PeerStart,
                 side: str) -> dict[str, Any] | None:
    """``peer``'s answer to its start (:func:`start_replicate`): its facts when ready,
    else ``None`` (the baseline's reason went to the run), or the test fails."""
    if not start.ready:
        if side == "candidate":
            pytest.fail(f"gpucheck benchmark gate: the candidate process could not time "
                        f"this test: {start.reason}", pytrace=False)
        run.keep_baseline(start.reason)
        return None
    foreign = start.facts.get("foreign_modules") or []
    if foreign:
        names = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        pytest.fail(
            f"gpucheck benchmark gate: the baseline process in {peer.checkout} imported "
            f"{names} from this checkout ({peer.rootdir}), so it would time this run's "
            "code against itself; make the checkout import its own code (pytest ini "
            "'pythonpath = src' for a src layout, or no editable install of the project)",
            pytrace=False)
    return start.facts


@dataclass
class _Progress:
    """Where one benchmark's pairs stand."""

    per: int
    schedule: LookSchedule
    base: list[float] = field(default_factory=list)
    cand: list[float] = field(default_factory=list)
    #: Minor page faults per call of each side's rounds (bench/interleave.py).
    faults: dict[str, list[float]] = field(
        default_factory=lambda: {"baseline": [], "candidate": []})
    facts: dict[str, Any] = field(default_factory=dict)
    #: How the candidate's process timed its rounds (its facts' method).
    candidate_method: str = ""
    looks: list[int] = field(default_factory=list)
    stopped: str = "decided"
    done: int = 0
    started_at: float = field(default_factory=time.monotonic)
    #: Seconds spent starting processes within this benchmark: not part of the pace of
    #: its pairs, but part of what a later look that needs new ones costs.
    starting: float = 0.0
    pairs: list[Pair] = field(default_factory=list)
    last: Pair | None = None
    outcome: tuple[str, str] = ("", "")


class Interleaved(Timing):
    """Time the baseline checkout and this checkout in processes of their own, in turns,
    one round each, in ``replicates`` runs of the test and more where a look cannot
    decide; None when the baseline has no such benchmark (then this process times it
    alone)."""

    round_seconds = INTERLEAVED_ROUND_SECONDS

    def __init__(self, run: GateRun) -> None:
        self.run = run

    def time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed | None:
        replicates = bench.defaults.replicates
        # Whole blocks (two pairs of rounds) per pair of processes, ``rounds`` per side
        # in all: the pairs are the evidence (their number decides the interval), the
        # blocks only make each pair's figure steadier.
        per = 2 * max(math.ceil(prepared.rounds / (2 * replicates)), MIN_BLOCKS_PER_PAIR)
        state = _Progress(per, LookSchedule.for_pairs(replicates))
        try:
            with stopped_by_sigterm():
                self._start_pairs(bench, state, replicates)
                while True:
                    if not self._look(bench, state, prepared.iterations):
                        return None
                    if self._stop(bench, state):
                        break
                for pair in state.pairs:
                    for peer in pair:
                        if self.run.live(peer):  # a retired one frees its arrays as it ends
                            peer.release()
        except PeerError as exc:
            pytest.fail(f"gpucheck benchmark gate: {exc}", pytrace=False)
        return self._finish(bench, state, prepared)

    def _start_pairs(self, bench: GpuBenchmark, state: _Progress, count: int) -> None:
        """At least ``count`` pairs running, their start-up counted."""
        began = time.monotonic()
        state.pairs = self.run.pairs(count)
        state.starting += self._note_start(bench, began, state.pairs)

    def _look(self, bench: GpuBenchmark, state: _Progress, iterations: int) -> bool:
        """Time the pairs of the next look; False when the baseline has no such test."""
        target = state.schedule.pairs_at(len(state.looks) + 1)
        if target > len(state.pairs):
            self._start_pairs(bench, state, target)
        while state.done < target:
            if not self._one_pair(bench, state, iterations):
                return False
            self.run.pair_done(state.done)
            state.done += 1
            self.run.progress(state.done, target, state.base, state.cand, state.per,
                              state.schedule.share(len(state.looks) + 1))
        state.looks.append(state.done)
        return True

    def _one_pair(self, bench: GpuBenchmark, state: _Progress, iterations: int) -> bool:
        """Time pair ``state.done``; False when the baseline has no such test."""
        base, cand = state.last = state.pairs[state.done]
        # Both set up the test at once (begin_together); the side that starts this pair
        # times the first round of each block: each side in every other pair.
        starts = {"baseline": base, "candidate": cand}
        order = SIDES if first_side(state.done) == SIDES[0] else SIDES[::-1]
        answers = begin_together(self.run, starts, order, iterations)
        if answers["baseline"].ready and not answers["candidate"].ready:
            # The candidate's failure ends this test; the baseline's own test finishes
            # first, so its process can serve the next benchmark.
            base.end()
        begun = {side: accept_start(self.run, starts[side], answers[side], side)
                 for side in order}
        if begun.get("baseline") is None:
            if begun.get("candidate") is not None:
                # Ready, it waits for its rounds: let its test finish.
                cand.end()
            if state.done:
                pytest.fail(f"gpucheck benchmark gate: the baseline timed this test "
                            f"{state.done} time(s), then not: {base.checkout}", pytrace=False)
            return False
        state.facts = dict(begun["baseline"] or {})
        state.candidate_method = str((begun.get("candidate") or {}).get("method", ""))
        self._time_pair(bench, base, cand, state)
        state.outcome = base.end()
        cand_outcome, cand_message = cand.end()
        if cand_outcome not in ("passed", "was skipped"):
            pytest.fail(f"gpucheck benchmark gate: this test {cand_outcome} in the "
                        f"candidate process: {cand_message}", pytrace=False)
        return True

    def _stop(self, bench: GpuBenchmark, state: _Progress) -> bool:
        """Whether the looks stop here (and why, in ``state.stopped``)."""
        looks, schedule = state.looks, state.schedule
        if self.run.decide(pair_figures_of(state.base, state.cand, state.per),
                           schedule.share(len(looks))):
            state.stopped = "decided"
            return True
        if len(looks) >= schedule.looks:
            state.stopped = "last look"
            return True
        # The next look fits the budget when its pairs, at the pace so far, do, with the
        # start-up of the processes it needs that are not running yet (a look's pairs
        # used to start after the projection: 144 s and 174 s for a 120 s budget, issue
        # 43).
        missing = max(schedule.pairs_at(len(looks) + 1) - len(state.pairs), 0)
        if not next_look_fits(time.monotonic() - state.started_at, state.starting, state.done,
                              schedule.step, missing, bench.defaults.start_per_pair(),
                              bench.defaults.budget):
            state.stopped = "budget"
            return True
        return False

    def _time_pair(self, bench: GpuBenchmark, base: BaselinePeer, cand: BaselinePeer,
                   state: _Progress) -> None:
        """Time ``per`` rounds of each side of pair ``state.done``'s processes, in the
        pair's balanced order (:func:`~.interleave.pair_rounds`: an untimed round per
        side, then blocks of first, second, second, first)."""
        # --gpu-bench-pin=off leaves the processes' CPUs as they are, this one included.
        held = shared_cpu(bench.backend, (base.pid, cand.pid)) \
            if bench.defaults.pin != "off" else contextlib.nullcontext()
        with held:
            base_rounds, cand_rounds = time_pair(base, cand, state.done, state.per)
        state.base += base_rounds
        state.cand += cand_rounds
        # The timed rounds are each side's last ``per`` (the untimed one came first).
        state.faults["baseline"] += base.faults[-state.per:]
        state.faults["candidate"] += cand.faults[-state.per:]

    def _note_start(self, bench: GpuBenchmark, began: float, pairs: list[Pair]) -> float:
        """Seconds since ``began`` when some of ``pairs`` were started since (their
        start-up, kept per pair for the budget's projections), else 0."""
        defaults = bench.defaults
        new = [pair for pair in pairs if id(pair[0]) not in defaults.noted_pairs]
        if not new:
            return 0.0
        seconds = time.monotonic() - began
        defaults.noted_pairs |= {id(pair[0]) for pair in new}
        defaults.started_pairs += [seconds / len(new)] * len(new)
        return seconds

    def _finish(self, bench: GpuBenchmark, state: _Progress, prepared: Prepared) -> Timed:
        """The candidate's rounds replayed into pytest-benchmark, the facts the verdict
        prints, and the baseline's record handed to the run."""
        assert state.last is not None
        result = replay_and_call(bench, state.cand, prepared)
        ceiling = copy_ceiling_at_size(bench, prepared.timer)
        bench.extra["replicates"] = state.done
        # How the pairs were judged (bench/sequential.py) and how the processes were
        # held: the verdict prints both.
        sequential = {"looks": state.looks, "stopped": state.stopped,
                      "schedule": state.schedule.as_dict(), "budget": bench.defaults.budget}
        bench.extra["sequential"] = sequential
        if bench.defaults.pin:
            bench.extra["pinning"] = pinning_words(bench.defaults.pin_plan, bench.defaults.pin,
                                                   bench.backend)
        if bench.defaults.placement_seed is not None:
            bench.extra["placement_seed"] = bench.defaults.placement_seed
        bench.extra["page_faults_per_call"] = float(np.median(state.faults["candidate"]))
        facts, (outcome, message) = state.facts, state.outcome
        timed = Timed(state.cand, result, ceiling, method=state.candidate_method or None)
        baseline = BenchmarkRecord(
            name=bench.name, environment=environment_from_dict(dict(facts["environment"])),
            method=str(facts["method"]), samples=state.base, iterations=prepared.iterations,
            warmup_rounds=int(facts["warmup_rounds"]),
            first_call_seconds=float(facts["first_call_seconds"]),
            l2_flushed=bool(facts["l2_flushed"]), bytes=bench.bytes, flops=bench.flops,
            extra={"checkout": str(state.last[0].checkout), "outcome": outcome,
                   "message": message, "replicates": state.done, "sequential": sequential,
                   "page_faults_per_call": float(np.median(state.faults["baseline"]))})
        self.run.keep_baseline(baseline)
        return timed
