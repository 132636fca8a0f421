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
        self.ended = False
        self.role, self.checkout = "baseline", "../base"

    def ask_to_stop(self) -> None:
        self.asked += 1

    def close(self) -> str:
        self.closed += 1
        if self.error == "raise":
            raise ValueError("flush of closed file")
        return self.error


def _state(replicates: int, pairs: list[tuple[Peer, Peer]]) -> Any:
    from pytest_gpucheck.bench.peers import PeerBytecode, RetiredPeers
    from pytest_gpucheck.bench.session import BenchSession

    state: Any = BenchSession.__new__(BenchSession)
    state.measure = MeasureDefaults(replicates=replicates)
    state.pairs = pairs
    state.retired = RetiredPeers()
    state.fresh = []
    state.bytecode = PeerBytecode()
    return state


def test_pairs_beyond_the_first_look_end_after_their_benchmark() -> None:
    state = _state(3, [(Peer(), Peer()) for _ in range(5)])
    kept, extra = state.pairs[:3], state.pairs[3:]
    state.retire_extra_pairs()
    assert state.pairs == kept
    assert state.retired.peers == [peer for pair in extra for peer in pair]
    assert all(peer.asked == 1 and peer.closed == 0 for pair in extra for peer in pair)
    assert all(peer.asked == 0 and peer.closed == 0 for pair in kept for peer in pair)


def test_retired_peers_that_ended_are_waited_for_after_the_next_test() -> None:
    # Before, the retired pairs were waited for only at the session's end: each stayed a
    # zombie with its socket and output file open for the rest of the run.  The broken
    # twin (nothing waited for before the end) leaves `closed` at 0 below; one that waits
    # for a peer still running blocks the next test (up to 120 s a peer).
    first = [(Peer(), Peer("gpucheck: the baseline process ... exited with code 3"))]
    state = _state(1, [(Peer(), Peer()), *first])
    state.retire_extra_pairs()  # after the benchmark that added them: asked to end
    first[0][1].ended = True  # one has ended by the next test, the other has not
    second = [(Peer(), Peer())]
    state.pairs += second
    state.retire_extra_pairs()  # after the next test: the one that ended waited for
    assert [peer.closed for pair in first for peer in pair] == [0, 1]
    assert [peer.closed for pair in second for peer in pair] == [0, 0]
    assert state.retired.errors == ["gpucheck: the baseline process ... exited with code 3"]
    for peer in (first[0][0], *second[0]):
        peer.ended = True
    state.retire_extra_pairs()  # a test that added none: the rest waited for
    assert [peer.closed for pair in first + second for peer in pair] == [1, 1, 1, 1]
    assert state.retired.peers == []


def test_a_retired_peer_that_cannot_be_waited_for_is_said_at_the_end_once() -> None:
    # A close that raises (an OSError writing its log for the message) neither loses the
    # other peers' lines nor reaches the test that happened to run, and the session's end
    # says every retired peer's line with the others' and closes no peer twice.
    broken, bad, good = Peer("raise"), Peer("gpucheck: ... exited with code 3"), Peer()
    state = _state(1, [(Peer(), Peer()), (broken, bad), (good, Peer())])
    state.retire_extra_pairs()
    for peer in (broken, bad, good):
        peer.ended = True
    state.retire_extra_pairs()
    assert [broken.closed, bad.closed, good.closed] == [1, 1, 1]
    still = state.retired.peers
    assert len(still) == 1  # good's twin, still running
    line = state.end_peers()
    assert line == ("gpucheck: the baseline process in ../base could not be waited for: "
                    "flush of closed file; gpucheck: ... exited with code 3")
    assert [broken.closed, bad.closed, good.closed, still[0].closed] == [1, 1, 1, 1]
    assert state.retired.peers == []
    assert state.pairs == []


def test_a_pair_a_look_added_is_retired_once_it_has_timed_the_benchmark() -> None:
    # Kept until the benchmark's end, every pair a benchmark started was alive at its
    # last look (60 processes at the default schedule; 57 torch-cpu ones ran a 24 GB
    # machine out of memory, stop 30).  A shared pair is not retired; a pair retired
    # after its look is not asked, waited for or said twice when the benchmark ends.
    from pytest_gpucheck.bench.run import GateRun

    state = _state(2, [(Peer(), Peer()) for _ in range(4)])
    run: Any = GateRun.__new__(GateRun)
    run.session = state
    shared, extra = state.pairs[:2], state.pairs[2:]
    run.pair_done(1)
    assert all(peer.asked == 0 and run.live(peer) for pair in shared for peer in pair)
    run.pair_done(2)
    assert [peer.asked for peer in extra[0]] == [1, 1]
    assert not any(run.live(peer) for peer in extra[0])
    assert all(run.live(peer) for peer in extra[1])
    state.retire_extra_pairs()  # the benchmark's end
    assert [peer.asked for pair in extra for peer in pair] == [1, 1, 1, 1]
    assert state.retired.peers == [peer for pair in extra for peer in pair]
    for pair in extra:
        for peer in pair:
            peer.ended = True
    state.retire_extra_pairs()
    assert [peer.closed for pair in extra for peer in pair] == [1, 1, 1, 1]


def test_a_new_peer_at_a_reaped_peers_address_is_not_taken_as_retired() -> None:
    # Retired peers were remembered by ``id``: once one was reaped and let go, a peer a
    # later look started could get its address, was taken as retired, and was never
    # asked to end nor waited for (it ran beside the next look's pairs until the lead
    # ended: 13 processes where 12 were allowed, stop 31).
    state = _state(0, [])
    old = Peer()
    old.ended = True
    state.retired.add([old])  # asked, and waited for at once (it has ended)
    assert (old.asked, old.closed, state.retired.peers) == (1, 1, [])
    gone = id(old)
    del old
    fresh = [Peer() for _ in range(64)]
    reused = [peer for peer in fresh if id(peer) == gone]
    assert reused, "CPython gives a freed object's address to the next of its size"
    assert not state.retired.holds(reused[0])
    state.retired.add(reused)
    assert reused[0].asked == 1
