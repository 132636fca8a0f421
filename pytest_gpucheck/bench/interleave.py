"""An interleaved baseline: the baseline checkout timed round by round beside this run.

``pytest --gpu-bench-against=DIR`` compares every ``gpu_benchmark`` of this
run with the same test in ``DIR``, a checkout of the baseline code (``git
worktree add DIR origin/main``), timed in the same job: a second pytest process
(the *peer*) runs in ``DIR`` and takes turns with this one, one round each, in
an order balanced by construction (:func:`pair_rounds`: the starting side and
the CPU halves alternate between pairs of processes, an untimed round per side,
then first, second, second, first blocks).  Whatever
slows the machine down for longer than a round (another tenant, a clock
change, a burst of memory traffic) slows both sides alike and cancels in the
per-pair ratio, which is why this is the gate that holds on shared runners
(``scripts/measure_gate.py``); a baseline stored by an earlier run
(``--gpu-bench-compare``) sees the drift between the two runs instead.

The two processes share one CPU while their rounds run (for single-threaded
CPU-tier backends): on a 2-core machine the two sides on different cores
differed by up to 8% at 2^22 elements, on one core by 1% to 3%.

Both processes keep the C library's allocator as users run it: no fixed mmap
threshold (issue 43: with glibc's threshold fixed at 128 KiB every large host
array was fresh pages faulting in on every call, a program no user runs, and a
change that allocates read 2-5x its size).  Each starts in the state glibc's own
adaptive thresholds reach once a process has freed a large array
(:func:`steady_allocator`), so that whether a kernel's temporaries are faulted in
afresh on every call no longer depends on what else the process happened to free
before.  Where each process's arrays land is
random between pairs (:func:`placement_pad`), and so is where its stack starts
(:func:`stack_pad`); the pair is the gate's unit of evidence, so placement widens
the interval instead of biasing the change.

The lead (this run) and the peer talk over a socket pair with
:mod:`multiprocessing.connection` (pickled tuples); the peer is started on the
first benchmark, serves one benchmark per ``run`` message, and ends with the
session, or as soon as its end of the socket closes (the lead died).  A peer
that dies, cannot start or fails its test is never a pass: the lead's test
errors, or its verdict says why the baseline is missing.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.bench.measure import minor_faults
from pytest_gpucheck.bench.placement import (
    STACK_PAD_VARIABLE,
    c_library,
    placement_pad,
    stack_pad,
    steady_allocator,
)
from pytest_gpucheck.bench.timing import THREADS_VARIABLE
from pytest_gpucheck.environment import (
    PARENT_VARIABLE,
)
from pytest_gpucheck.processes import start_orphan_guard

if TYPE_CHECKING:
    from types import ModuleType

    from pytest_gpucheck.backends.base import Backend

#: The environment variables that size the frameworks' thread pools in a measured
#: process: OpenMP (PyTorch's intra-op pool, NumPy's BLAS when built with it), MKL,
#: OpenBLAS, Accelerate, numexpr and Numba's parallel pool.  Read when each framework
#: starts, so they are set when the process is.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")
#: XLA's CPU flag for a single-threaded Eigen pool (JAX on the CPU), added to XLA_FLAGS
#: when a side has one CPU.
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
#: The measured process reads its CPUs and its placement seed from these.
PIN_VARIABLE = "PYTEST_GPUCHECK_BENCH_CPUS"
PLACEMENT_VARIABLE = "PYTEST_GPUCHECK_BENCH_PLACEMENT_SEED"


@dataclass(frozen=True)
class PinPlan:
    """Each side's own CPUs (baseline, candidate) and the thread pool size of both."""

    sides: tuple[tuple[int, ...], tuple[int, ...]]
    threads: int

    def describe(self, one_cpu_while_timed: bool = False) -> str:
        """``threads pinned: each side its own CPUs (0 | 1, each side on each half in half
        of the pairs), 1 framework thread each``; with ``one_cpu_while_timed`` (a
        single-threaded CPU backend, :func:`shared_cpu`) the two sides' rounds share one
        of those CPUs instead."""
        def cpus(side: tuple[int, ...]) -> str:
            return ",".join(map(str, side))
        threads = f"{self.threads} framework thread{'s' if self.threads > 1 else ''} each"
        if one_cpu_while_timed or self.sides[0] == self.sides[1]:
            return f"threads pinned: both sides on one CPU while timed, {threads}"
        return (f"threads pinned: each side its own CPUs ({cpus(self.sides[0])} | "
                f"{cpus(self.sides[1])}, each side on each half in half of the pairs), {threads}")


def pinning_words(plan: PinPlan | None, pin: str, backend: Backend) -> str:
    """What a verdict says of how the measured processes of ``backend`` were held."""
    shared = not backend.is_gpu and backend.single_threaded
    if plan is not None:
        return plan.describe(one_cpu_while_timed=shared)
    if pin == "off":
        return "threads not pinned (--gpu-bench-pin=off)"
    return "threads not pinned (no sched_setaffinity here)"


def pinning_plan(pin: str, allowed: set[int] | None = None) -> PinPlan | None:
    """How the measured processes are held under ``pin`` (``split``: the CPUs this
    process may use, split in two halves, one per side, and thread pools the size of a
    half, at least 1; on 2 CPUs one each); ``None`` for ``off`` and where the platform
    has no ``sched_setaffinity`` (not Linux): the processes then run as they are."""
    if pin == "off" or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    if len(cpus) < 2:
        # One CPU: both sides on it, one thread each (they take turns anyway).
        return PinPlan((tuple(cpus), tuple(cpus)), 1)
    half = len(cpus) // 2
    return PinPlan((tuple(cpus[:half]), tuple(cpus[half:2 * half])), half)


def pinned_environment(env: dict[str, str], cpus: tuple[int, ...] | None,
                       threads: int | None, placement_seed: int | None) -> dict[str, str]:
    """``env`` for a measured process: its thread pools of ``threads``, its CPUs and its
    placement seed for it to apply (:func:`main`, :class:`PeerServer`)."""
    env = dict(env)
    if threads is not None:
        for name in THREAD_VARIABLES:
            env[name] = str(threads)
        # What the process's clock follows (bench/timing.py host_clock_for).
        env[THREADS_VARIABLE] = str(threads)
        if threads == 1 and XLA_ONE_THREAD not in env.get("XLA_FLAGS", ""):
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {XLA_ONE_THREAD}".strip()
    if cpus:
        env[PIN_VARIABLE] = ",".join(map(str, cpus))
    if placement_seed is not None:
        env[PLACEMENT_VARIABLE] = str(placement_seed)
        env[STACK_PAD_VARIABLE] = stack_pad(placement_seed)
    return env


def apply_pinning() -> None:
    """In a measured process: keep to the CPUs the lead gave it (:data:`PIN_VARIABLE`);
    its thread pools follow :data:`THREAD_VARIABLES` (PyTorch sizes its intra-op pool
    from OMP_NUM_THREADS when it starts)."""
    value = os.environ.get(PIN_VARIABLE, "")
    if value and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(0, {int(c) for c in value.split(",")})


#: The two sides of a pair, in the order :class:`BaselinePeer` pairs hold them.
SIDES = ("baseline", "candidate")


def first_side(pair: int) -> str:
    """The side that starts pair ``pair`` (0-based): its process is started first
    (:func:`start_order`) and it times the first round of each block (both set up
    their test at once: ``paired.begin_together``; the side that set it up first was
    the slower for the whole pair, issue 43).  The baseline in even pairs, the
    candidate in odd ones: a side that always started would always time round 0 in the
    other's wake (identical code read 3.6% to 21% lower in the first block when the baseline
    always started, issue 43).

    Crossed with :func:`cpu_half` in a cycle of four pairs (starts B, C, B, C against the
    baseline's halves 0, 1, 1, 0): each factor balances in every two pairs, so every
    even number of pairs (each look's) holds each side in each position equally often
    and both effects leave the change; and over four pairs each start meets each half
    once, so a run's pairs tell the two effects apart (``scripts/measure_accuracy.py``
    reads each as its own contrast).  Before, the starting side always had the first
    half and only their sum could be read."""
    return SIDES[pair % 2]


def start_order(pair: int) -> tuple[str, str]:
    """The order in which pair ``pair``'s two processes are started: :func:`first_side`
    first.  The baseline's process was always started first (issue 43's A/A bias
    search): the first of two processes started together also collects its tests
    first and may get its memory first; alternating puts that on each side in every
    other pair, like the rest of what goes first."""
    first = first_side(pair)
    return first, SIDES[1 - SIDES.index(first)]


#: The baseline's CPU half in the pairs of one four-pair cycle (:func:`first_side`).
BASELINE_HALVES = (0, 1, 1, 0)


def cpu_half(pair: int, role: str) -> int:
    """Which half of the pinned CPUs (:func:`pinning_plan`) ``role``'s process of pair
    ``pair`` gets: the baseline's halves run 0, 1, 1, 0 over each four pairs
    (:data:`BASELINE_HALVES`), the candidate the other.  Halves differ (caches, clocks,
    the cores' other tenants: torch-cpu read -24% with the baseline always on the first
    half, +6.7% unpinned), so neither side may always get one: over every even number
    of pairs each side has each half as often, and the difference between halves
    averages out of the change (it widens the between-pair spread instead, which the
    interval counts).  Why four pairs and not two: :func:`first_side`."""
    base = BASELINE_HALVES[pair % len(BASELINE_HALVES)]
    return base if role == SIDES[0] else 1 - base


def pair_rounds(pair: int, blocks: int) -> list[tuple[str, bool]]:
    """The order in which pair ``pair``'s two processes run their rounds for one
    benchmark, after both have set up their test: ``(side,
    timed)`` per round.

    First one untimed round per side, the second side's then the first side's; then
    ``blocks`` blocks of four timed rounds in the order first, second, second, first
    (ABBA).  With the untimed rounds in that order, every block holds, for each side,
    one round that follows its own round and one that follows the other side's, and
    each side's two rounds of a block follow one baseline round and one candidate
    round: a cost that depends on what ran just before a round (caches, the TLB, the
    clock's ramp; either "self or other" or "which side") is the same for both sides
    in every block and cancels in the block's ratio, in the first block as in the
    others (``tests/bench/test_bench_order.py``)."""
    first = first_side(pair)
    second = SIDES[1 - SIDES.index(first)]
    order = [(second, False), (first, False)]
    for _ in range(blocks):
        order += [(first, True), (second, True), (second, True), (first, True)]
    return order


def time_pair(base: Any, cand: Any, pair: int, per: int) -> tuple[list[float], list[float]]:
    """Run :func:`pair_rounds` on one pair of started processes (``per`` timed rounds a
    side, an even number): the timed seconds per call of (baseline, candidate), round
    ``k`` of one side beside round ``k`` of the other.  ``base`` and ``cand`` need only
    a ``round()`` that returns seconds per call."""
    assert per % 2 == 0, f"{per} rounds a side: the blocks need an even number"
    peers = {"baseline": base, "candidate": cand}
    samples: dict[str, list[float]] = {"baseline": [], "candidate": []}
    for side, timed in pair_rounds(pair, per // 2):
        seconds = peers[side].round()
        if timed:
            samples[side].append(seconds)
    return samples["baseline"], samples["candidate"]


@contextmanager
def shared_cpu(backend: Backend, pids: tuple[int, ...]) -> Iterator[None]:
    """Run the two timed processes on one CPU while their rounds interleave.

    Two sides on different cores see different caches and clocks (up to 8% apart
    on a 2-core machine, as much as the gate must catch).  Only for
    single-threaded CPU-tier backends: a thread pool or a GPU launch path pinned
    to one CPU would measure something else.  Each process's affinity is put back
    afterwards.
    """
    if backend.is_gpu or not backend.single_threaded or not hasattr(os, "sched_setaffinity"):
        yield
        return
    try:
        before = {pid: os.sched_getaffinity(pid) for pid in pids}
    except OSError:
        yield
        return
    # Each side may keep to CPUs of its own (pinning_plan): the shared one is one of
    # either side's.
    allowed = sorted(set.union(*before.values())) if before else []
    if not allowed:
        yield
        return
    # The CPU this process last ran on: two gates (or xdist workers) running at once
    # then mostly pin their pairs apart, not all onto one CPU.
    current = _last_cpu()
    cpu = {current if current in allowed else allowed[-1]}
    try:
        for pid in pids:
            os.sched_setaffinity(pid, cpu)
        yield
    finally:
        for pid, cpus in before.items():
            # The process may have died; its own error says so.
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pid, cpus)


def _last_cpu() -> int | None:
    """The CPU this process last ran on (Linux ``/proc/self/stat``), else ``None``."""
    try:
        # Field 39 counts from 1, after the command name in parentheses.
        return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


# -- the peer's side ---------------------------------------------------------------------
class PeerGone(Exception):
    """The lead closed its end: the peer stops timing and exits."""


def _one_line(report: pytest.TestReport) -> str:
    """The failure's exception line (``KeyError: 'old api'``), else its last line."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", "")
    if message:
        return str(message).splitlines()[0]
    lines = report.longreprtext.strip().splitlines()
    return lines[-1] if lines else "(no message)"


class PeerServer:
    """The peer process's plugin: serves the lead's ``run`` requests one at a time
    in place of pytest's own test loop."""

    def __init__(self, fd: int) -> None:
        self.conn = Connection(fd)
        self.lead_root: Path | None = None
        #: Calls per round the lead asked for, for the benchmark being served.
        self.iterations = 1
        self.collect_errors = 0
        #: The round runners (and so the arrays) of the benchmark's replicates so far.
        self.kept: list[Any] = []
        #: The placement pads of the benchmark being served (:meth:`pad`).
        self.pads: list[int] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from _pytest.runner import runtestprotocol

        try:
            _, root = self.conn.recv()
            self.lead_root = Path(root)
            self.conn.send(("collected", [item.nodeid for item in session.items],
                            self.collect_errors))
            items = {item.nodeid: item for item in session.items}
            while True:
                message = self.conn.recv()
                if message[0] == "stop":
                    return True
                if message[0] == "release":
                    self.kept.clear()
                    self._free_pads()
                    continue
                if message[0] != "run":
                    continue
                item = items[message[1]]
                self.iterations = int(message[2])
                self.pad(item.nodeid)
                # nextitem=None: every fixture is torn down after each test, since the
                # lead may ask for any test next.
                reports = runtestprotocol(item, nextitem=None, log=True)
                failed = [r for r in reports if r.failed]
                if failed:
                    outcome = "errored" if failed[0].when != "call" else "failed"
                    self.conn.send(("finished", outcome, _one_line(failed[0])))
                else:
                    skipped = [r for r in reports if r.skipped]
                    outcome = "was skipped" if skipped else "passed"
                    self.conn.send(("finished", outcome, ""))
        except (EOFError, OSError):
            return True  # the lead is gone

    def pad(self, nodeid: str) -> None:
        """The random placement offset of this process and benchmark
        (:func:`placement_pad`), held until the lead's ``release``."""
        value = os.environ.get(PLACEMENT_VARIABLE, "")
        libc = c_library()
        if not value or libc is None:
            return
        small, pages = placement_pad(int(value), nodeid)
        for size in (small, pages * 4096):
            block = libc.malloc(max(size, 1))
            if block:
                self.pads.append(block)

    def _free_pads(self) -> None:
        libc = c_library()
        if libc is not None:
            for block in self.pads:
                libc.free(block)
        self.pads.clear()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors += 1

    def serve(self, ready: dict[str, Any], time_round: Any) -> None:
        """From the benchmark fixture: say ``ready`` and time rounds until ``done``."""
        self.conn.send(("ready", {**ready, "foreign_modules": self._foreign_modules()}))
        try:
            while True:
                message = self.conn.recv()
                if message[0] == "round":
                    faults = minor_faults()
                    seconds = time_round()
                    self.conn.send(("sample", seconds,
                                    (minor_faults() - faults) / max(self.iterations, 1)))
                elif message[0] == "done":
                    return
        except (EOFError, OSError):
            raise PeerGone("the lead process closed the connection") from None

    def _foreign_modules(self) -> list[str]:
        """Modules this process imported from the lead's checkout instead of its own (an
        editable install of the project points there): timing them would compare the
        candidate with itself."""
        lead, own = self.lead_root, Path.cwd().resolve()
        if lead is None:
            return []
        lead = lead.resolve()
        # An environment inside the checkout (.venv) holds installed packages, not the
        # project's code; the plugin's own package is the harness, not the code under
        # test.  Only its package folder: the bundled kernels that an editable install
        # maps to other folders of the checkout (pytest_gpucheck.conformance,
        # pytest_gpucheck.reference_kernels) are code under test (issue 43).
        installed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
        harness = harness_folder()
        found = []
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if not path:
                continue
            resolved = Path(path).resolve()
            if resolved.is_relative_to(harness):
                continue
            if (resolved.is_relative_to(lead) and not resolved.is_relative_to(own)
                    and not any(resolved.is_relative_to(p) for p in installed)):
                found.append(name)
        return sorted(found)



def harness_folder() -> Path:
    """The folder of the plugin's own package (``pytest_gpucheck/``): the harness that
    times both sides and speaks the lead's protocol, so the baseline process keeps the
    lead's copy of it."""
    import pytest_gpucheck

    return Path(pytest_gpucheck.__file__).resolve().parent


class CheckoutImports(importlib.abc.MetaPathFinder):
    """In the peer: a module that would come from the lead's checkout (an editable
    install of the project points there) comes from the same file in this checkout
    instead, so the baseline times its own code, not the candidate's.

    Any module, a submodule included: setuptools' editable finder maps a subpackage to a
    folder of its own (``pytest_gpucheck.conformance`` to ``conformance/``), which its
    parent's ``__path__`` never reaches, so mapping top-level names only left the
    project's bundled kernels the candidate's (a +29% slowdown planted in a bundled
    kernel read -4.6%, issue 43).  Only the plugin's own package folder
    (:func:`harness_folder`) stays the lead's: it is the harness, not the code under
    test.  Submodules found through a mapped package's ``__path__`` are in this checkout
    already.
    """

    def __init__(self, lead: Path, checkout: Path) -> None:
        self.lead, self.checkout = lead.resolve(), checkout.resolve()
        self.harness = harness_folder()

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        origin = Path(spec.origin).resolve() if spec is not None and spec.has_location \
            and spec.origin else None
        if origin is None or not origin.is_relative_to(self.lead) \
                or origin.is_relative_to(self.checkout) or origin.is_relative_to(self.harness):
            return None
        mapped = self.checkout / origin.relative_to(self.lead)
        if not mapped.exists():
            return None
        assert spec is not None
        locations = [str(mapped.parent)] if spec.submodule_search_locations is not None \
            else None
        return importlib.util.spec_from_file_location(fullname, mapped,
                                                      submodule_search_locations=locations)


def main(argv: list[str]) -> int:
    """``python -m pytest_gpucheck.bench.interleave LEAD_ROOT -- PYTEST_ARGS``: the peer."""
    lead, separator, *args = argv
    assert separator == "--", "usage: LEAD_ROOT -- PYTEST_ARGS"
    # The lead started this process directly: when the lead disappears (SIGKILL, a
    # crash, SIGTERM's default action), this process must not go on with a test or a
    # collection that may take minutes; the guard ends it within a quarter second.
    # Its own variable (not inherited: PEER_DROPPED_ENV, the process layer's) names the lead.
    start_orphan_guard({PARENT_VARIABLE: f"{os.getppid()}@{socket.gethostname()}"})
    sys.meta_path.insert(0, CheckoutImports(Path(lead), Path.cwd()))
    apply_pinning()
    steady_allocator()
    return int(pytest.main(args))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
