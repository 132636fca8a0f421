"""One benchmark's way through the gate: a :class:`GateRun`, built once when its
``gpu_benchmark`` fixture is set up and kept in its item's stash.

Its settings are resolved once (the run's, the ini override lines that match it, its
``gpu_bench`` marker), its level in the run's family is computed once (the family's
level over the benchmarks collected: Bonferroni as its test ends, Holm's first step),
and everything the timing and the verdict need of the run goes through it: the
processes that time it (the interleaved gate's pairs, the stored gate's fresh
processes), whether a look decides, the progress line, where its record and its
baseline go, and its verdict.  The fixture (:mod:`.fixture`) times; the session
(:mod:`.session`) keeps the run's state; this joins them for one benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.bench.fixture import marker_settings
from pytest_gpucheck.bench.gate import (
    GateSettings,
    Verdict,
    look_decides,
    progress_line,
    settings_for,
)
from pytest_gpucheck.bench.records import BenchmarkRecord

if TYPE_CHECKING:
    from pytest_gpucheck.bench.peers import BaselinePeer
    from pytest_gpucheck.bench.session import BenchSession


@dataclass
class GateRun:
    """One benchmark's settings, level and destinations (see the module's docstring)."""

    item: pytest.Item
    session: BenchSession
    #: The gate settings of this benchmark, resolved once.
    settings: GateSettings
    #: The marker's measurement keywords (rounds, bytes, ...).
    measure: dict[str, Any]
    #: The benchmarks collected (the family's size as the tests run) and this one's
    #: two-sided level: the family's level over them.
    family: int
    level: float
    #: Writes a line on the terminal while the test runs (the progress lines).
    write: Callable[[str], None]
    #: Its number among the benchmarks that started interleaved timing (0: none).
    number: int = 0
    #: What the timing made: this run's record, and the baseline's (or why none).
    record: BenchmarkRecord | None = None
    baseline: BenchmarkRecord | str | None = None
    verdict: Verdict | None = field(default=None)

    @property
    def name(self) -> str:
        return self.item.nodeid

    # -- what the timing asks of the run -------------------------------------------
    def pairs(self, count: int) -> list[tuple[BaselinePeer, BaselinePeer]]:
        """At least ``count`` pairs of processes (baseline checkout, this checkout)."""
        return self.session.peers(self.item.session, count)

    def pair_done(self, index: int) -> None:
        """Pair ``index`` has timed this benchmark.  One a later look added (beyond the
        ``gpu_bench_replicates`` pairs every benchmark shares) serves no other look nor
        benchmark: it is asked to end now.  Kept until the benchmark's end, a benchmark
        at its last look held every pair it had started, 60 processes at the default
        schedule: 57 torch-cpu processes of about 400 MB ran a 24 GB machine out of
        memory and the kernel killed three of them mid-run (stop 30)."""
        session = self.session
        if index >= session.measure.replicates:
            session.retired.add(list(session.pairs[index]))

    def live(self, peer: BaselinePeer) -> bool:
        """Whether ``peer`` still serves this run (not retired: asked to end)."""
        return not self.session.retired.holds(peer)

    def fresh(self) -> list[BaselinePeer]:
        """The stored gate's fresh processes in this checkout."""
        return self.session.fresh_processes(self.item.session)

    def decide(self, figures: list[float], share: float) -> bool:
        """Whether a look at ``figures``, spending ``share`` of this benchmark's level,
        decides (the fixture stops adding pairs when it does)."""
        return look_decides(figures, self.settings, self.level, share)

    def progress(self, done: int, pairs: int, baseline: list[float], current: list[float],
                 per: int, share: float = 1.0) -> None:
        """The progress line after a pair of processes, at this benchmark's level."""
        self.write(progress_line(self.name, self.number, self.family, done, pairs, baseline,
                                 current, per, self.level, share))

    def keep(self, record: BenchmarkRecord) -> None:
        """Keep this run's record (saved with which kind of process measured it)."""
        record.extra["process_mode"] = self.session.process_mode
        self.record = record
        self.session.local_records.append(record)

    def keep_baseline(self, baseline: BenchmarkRecord | str) -> None:
        """Keep the baseline's record, or why there is none."""
        self.baseline = baseline

    # -- the verdict -----------------------------------------------------------------
    def judge(self) -> Verdict:
        """The verdict of the record against its baseline (once, as the test ends)."""
        assert self.record is not None
        self.verdict = self.session.judge(self.item, self.record, self.baseline,
                                          settings=self.settings, level=self.level,
                                          family=self.family)
        return self.verdict


def gate_run(item: pytest.Item, session: BenchSession, write: Callable[[str], None],
             interleaved: bool) -> GateRun:
    """The :class:`GateRun` of ``item``'s benchmark: its marker read and its settings
    resolved here, once (a bad setting fails the test with one line); ``interleaved``
    counts it among the benchmarks the interleaved gate times (its progress number)."""
    measure, gate_kwargs = marker_settings(item)
    try:
        settings = settings_for(item.nodeid, session.gate, session.overrides, gate_kwargs)
    except ValueError as exc:
        pytest.fail(f"gpu_bench gate settings of {item.nodeid}: {exc}", pytrace=False)
    family = session.family_size(item.session)
    return GateRun(item, session, settings, measure, family, session.family_level / family,
                   write, number=session.started_benchmark() if interleaved else 0)
