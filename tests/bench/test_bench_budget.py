"""The interleaved gate's budget bounds what it says, and processes do not pile up
(issue 43).

Pairs added by a later look started after the budget's projection (144 s and 174 s
for a 120 s budget), and every added pair lived for the whole run (about 50 torch-cpu
processes of ~330 MB, 144 MB left free, 16 minutes to end).  The projection now counts
the start-up of the pairs a look must start, and the pairs beyond the first look's are
asked to end after the benchmark that added them.
"""

from __future__ import annotations

from typing import Any

from pytest_gpucheck.bench.fixture import MeasureDefaults, next_look_fits


def test_a_look_that_must_start_its_pairs_counts_their_start_up() -> None:
    # 10 pairs in 60 s (of which 20 s starting them): 4 s a pair; 5 more pairs take 20 s.
    assert next_look_fits(60.0, 20.0, 10, 5, 0, 4.0, 120.0)  # running already: 80 s
    # Five pairs to start at 4 s each: 100 s, still within 120 s.
    assert next_look_fits(60.0, 20.0, 10, 5, 5, 4.0, 120.0)
    # At 10 s a pair to start: 130 s, over the budget: the look is not taken.
    assert not next_look_fits(60.0, 20.0, 10, 5, 5, 10.0, 120.0)
    # The broken twin, the old rule (the pace over all the elapsed time, start-up
    # included, and nothing for the pairs to start): 60 + 6 * 5 = 90 s "fits".
    assert 60.0 + 60.0 / 10 * 5 <= 120.0


def test_the_start_up_per_pair_is_the_slowest_seen() -> None:
    defaults = MeasureDefaults()
    assert defaults.start_per_pair() == 0.0
    defaults.started_pairs += [3.0, 3.0, 7.5]
    assert defaults.start_per_pair() == 7.5


class Peer:
    def __init__(self, error: str = "") -> None:
        self.asked = 0
        self.closed = 0
        self.error = error

    def ask_to_stop(self) -> None:
        self.asked += 1

    def close(self) -> str:
        self.closed += 1
        return self.error


def test_pairs_beyond_the_first_look_end_after_their_benchmark() -> None:
    from pytest_gpucheck.bench.peers import RetiredPeers
    from pytest_gpucheck.bench.session import BenchSession

    state: Any = BenchSession.__new__(BenchSession)
    state.measure = MeasureDefaults(replicates=3)
    state.pairs = [(Peer(), Peer()) for _ in range(5)]
    state.retired = RetiredPeers()
    kept, extra = state.pairs[:3], state.pairs[3:]
    state.retire_extra_pairs()
    assert state.pairs == kept
    assert state.retired.peers == [peer for pair in extra for peer in pair]
    assert all(peer.asked == 1 and peer.closed == 0 for pair in extra for peer in pair)
    assert all(peer.asked == 0 and peer.closed == 0 for pair in kept for peer in pair)


def test_retired_peers_are_waited_for_a_benchmark_later_not_at_the_runs_end() -> None:
    # Before, the retired pairs were waited for only at the session's end: each stayed a
    # zombie with its socket and output file open for the rest of the run.  The broken
    # twin (nothing waited for before the end) leaves `closed` at 0 below.
    from pytest_gpucheck.bench.peers import RetiredPeers
    from pytest_gpucheck.bench.session import BenchSession

    state: Any = BenchSession.__new__(BenchSession)
    state.measure = MeasureDefaults(replicates=1)
    first = [(Peer(), Peer("gpucheck: the baseline process ... exited with code 3"))]
    state.pairs = [(Peer(), Peer()), *first]
    state.retired = RetiredPeers()
    state.retire_extra_pairs()  # after the benchmark that added them: asked to end
    second = [(Peer(), Peer())]
    state.pairs += second
    state.retire_extra_pairs()  # after the next: the first batch waited for
    assert [peer.closed for pair in first for peer in pair] == [1, 1]
    assert [peer.closed for pair in second for peer in pair] == [0, 0]
    state.retire_extra_pairs()  # a benchmark that added none: the second batch waited for
    assert [peer.closed for pair in second for peer in pair] == [1, 1]
    assert state.retired.peers == []
    # How a retired peer ended badly is kept for the session's end.
    assert state.retired.errors == ["gpucheck: the baseline process ... exited with code 3"]
