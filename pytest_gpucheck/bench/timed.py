"""What the benchmark fixture's timing modes share: what they start from
(:class:`Prepared`), what they hand back (:class:`Timed`), their interface
(:class:`Timing`), the run-wide measurement settings, and the steps every mode that
times away from the test's process takes (rounds replayed into pytest-benchmark, the
copy ceiling at the benchmark's size, the budget's projection).  The modes, a module
each (``bench/in_process.py``, ``bench/paired.py``, ``bench/fresh.py``,
``bench/serve.py``), call these, never back into the fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pytest_gpucheck.bench.ceiling import copy_ceiling
from pytest_gpucheck.bench.interleave import PinPlan
from pytest_gpucheck.bench.measure import (
    DeviceClock,
    RoundRunner,
    calibrate_iterations,
    copy_reference,
)
from pytest_gpucheck.bench.settings import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_PROCESSES,
    DEFAULT_REPLICATES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP_ROUNDS,
)

if TYPE_CHECKING:
    from pytest_gpucheck.bench.device_copy import L2Flusher
    from pytest_gpucheck.bench.environment import Environment
    from pytest_gpucheck.bench.fixture import GpuBenchmark
    from pytest_gpucheck.bench.records import BenchmarkRecord


@dataclass
class MeasureDefaults:
    """Run-wide measurement settings (ini and command line)."""

    rounds: int = DEFAULT_ROUNDS
    #: Cap on the rounds added when the noise needs more for the gate's power.
    max_rounds: int = DEFAULT_MAX_ROUNDS
    warmup_rounds: int = DEFAULT_WARMUP_ROUNDS
    l2_flush: bool = False
    cpu_clock: str = "auto"
    #: ``--gpu-bench-against``: runs of each benchmark's test per side.
    replicates: int = DEFAULT_REPLICATES
    #: ``--gpu-bench-save`` / ``--gpu-bench-compare``: fresh processes per benchmark.
    processes: int = DEFAULT_PROCESSES
    #: ``--gpu-bench-against``: seconds a benchmark may take to decide, more pairs
    #: added while it cannot (:mod:`.sequential`).
    budget: float = DEFAULT_BUDGET
    #: ``--gpu-bench-against``: how the measured processes' CPUs and thread pools are
    #: held (``split`` or ``off``) and the plan it made (:func:`~.interleave.pinning_plan`;
    #: ``None`` when off or not Linux).
    pin: str = ""
    pin_plan: PinPlan | None = None
    #: ``--gpu-bench-against``: the seed of the processes' random placement offsets.
    placement_seed: int | None = None
    #: ``--gpu-bench-against``: seconds each pair of processes took to start (and collect)
    #: in this run, for the budget's projection of a look that needs new ones.
    started_pairs: list[float] = field(default_factory=list)
    noted_pairs: set[int] = field(default_factory=set)

    def start_per_pair(self) -> float:
        """Seconds a new pair of processes is expected to take to start: the slowest
        seen so far in this run (0 before any)."""
        return max(self.started_pairs, default=0.0)


@dataclass
class Prepared:
    """What every timing mode starts from: the call, warmed up, its calls per round
    and the rounds asked for."""

    call: Callable[[], Any]
    iterations: int
    rounds: int
    warmup: int
    first_call: float
    timer: Any
    #: The device's facts, where this process times (the record's environment).
    environment: Environment
    #: Evicts the caches before each round (``l2_flush``), else None.
    flusher: L2Flusher | None
    #: The stored record this run is compared with (only with ``--gpu-bench-compare``).
    baseline: BenchmarkRecord | None


@dataclass
class Timed:
    """What a timing mode hands back to make the record from."""

    samples: list[float]
    #: The kernel's result (what the test gets back).
    result: Any
    #: (GB/s, bytes moved) of the copy ceiling at this size, when the bytes are declared.
    ceiling: tuple[float, int] | None = None
    l2_flushed: bool = False
    #: Facts stored with the record beside the benchmark's own ``extra``.
    extra: dict[str, Any] = field(default_factory=dict)
    #: In this process: the interleaved reference's description and rounds, and the
    #: host dispatch time of each round.
    reference: str = ""
    reference_samples: list[float] = field(default_factory=list)
    dispatch_samples: list[float] = field(default_factory=list)
    #: How the samples were timed, where another process timed them (its timer's
    #: method, which its clock rule chose there: bench/timing.py); ``None``: this
    #: process's timer.
    method: str | None = None
    #: Whether this process makes the benchmark's record from them.  False on the
    #: baseline checkout's side of a pair (``bench/serve.py``): its rounds went to the
    #: lead, whose record holds them, and the test gets only the kernel's result.
    record: bool = True


class Timing(Protocol):
    """A way of timing a benchmark's rounds, chosen once per benchmark by its fixture's
    factory (``bench/plugin.py``): in the test's own process (``bench/in_process.py``),
    beside the baseline checkout (``bench/paired.py``), in fresh processes
    (``bench/fresh.py``), or, in a process the lead started, the rounds the lead asks
    for (``bench/serve.py``).  The modes subclass it for :meth:`calls_per_round`."""

    #: The shortest round it asks the calibration for (0: pytest-benchmark's own).
    round_seconds: float

    def calls_per_round(self, timer: Any, call: Callable[[], Any], asked: int | None) -> int:
        """The calls per timed round: ``asked`` (the benchmark's, else its stored
        baseline's, so the two are measured alike), else calibrated to rounds of at least
        :attr:`round_seconds`."""
        return int(asked or calibrate_iterations(timer, call, self.round_seconds))

    def time(self, bench: GpuBenchmark, prepared: Prepared) -> Timed | None:
        """The rounds and the result (with :attr:`Timed.record` False: the result only,
        this process makes no record); None when it has nothing to time against (the
        benchmark is then timed in its own process, ``bench/in_process.py``)."""


def replay_and_call(bench: GpuBenchmark, samples: list[float], prepared: Prepared) -> Any:
    """For rounds timed in other processes: pytest-benchmark's table and JSON get them,
    replayed, and the kernel runs once here for the test's result."""
    clock = DeviceClock(prepared.timer.method)
    replay = iter(samples)

    def replayed() -> None:
        clock.advance(next(replay))

    bench.benchmark._timer = clock
    bench.benchmark.pedantic(replayed, rounds=len(samples), iterations=1, warmup_rounds=0)
    result = prepared.call()
    bench.backend.synchronize()
    return result


def process_ceiling(bench: GpuBenchmark) -> tuple[float, int]:
    """(GB/s, bytes moved) of this process's larger copy (:func:`.copy_ceiling`)."""
    ceiling = copy_ceiling(bench.backend, bench.defaults.cpu_clock)
    return ceiling.gbps, 2 * ceiling.nbytes


def copy_ceiling_at_size(bench: GpuBenchmark, timer: Any) -> tuple[float, int] | None:
    """(GB/s, bytes moved) of a device copy of this benchmark's bytes (same cache
    regime as the benchmark), its fastest of 20 rounds; the process's larger copy
    with the L2 flush; None without declared bytes."""
    if not bench.bytes:
        return None
    if bench.l2_flush:
        return process_ceiling(bench)
    reference = copy_reference(bench.backend, timer, int(bench.bytes or 0))
    runner = RoundRunner(timer, reference.call, reference.iterations)
    for _ in range(20):
        runner()
    return reference.nbytes / min(runner.samples) / 1e9, reference.nbytes


def next_look_fits(elapsed: float, starting: float, done: int, step: int, missing: int,
                   start_per_pair: float, budget: float) -> bool:
    """Whether a benchmark's next look ends within its ``budget`` (seconds): ``elapsed``
    so far, ``starting`` of them spent starting processes, ``done`` pairs timed; the
    look times ``step`` more pairs at the pace of those (start-up left out of the pace)
    and first starts the ``missing`` pairs it needs that are not running, each taking
    ``start_per_pair``."""
    pace = max(elapsed - starting, 0.0) / max(done, 1)
    return elapsed + pace * step + missing * start_per_pair <= budget
