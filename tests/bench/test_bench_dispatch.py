"""Device time without host dispatch, and one copy ceiling per device and size.

On an H200, numba-cuda's copy of 48 MiB read 244 us where CuPy's read 70 us: a round of
one call, between two CUDA events recorded on an idle device, bills that call's Python
dispatch as device time.  Here a fake device runs on a simulated clock: each call costs
the host its dispatch before its work is queued, the device runs queued work in order,
and an event is stamped when the device reaches it.  Nothing sleeps, so every figure is
exact and no test depends on the machine's load.

The old method (rounds of one call whenever that call lasts 200 us, whatever its
dispatch) is reimplemented here as :class:`OneCallRounds`; each check is shown to reject
it (or the old ceiling and wording) and to pass the timers the backends use.  The last
test runs a user's project with the plugin (NumPy's backend timed on simulated CUDA
events): the terminal line and both JSON files carry the device time and the launch
overhead.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from pytest_gpucheck.backends.cupy.backend import CupyEventTimer
from pytest_gpucheck.backends.jax.backend import ReadyTimer
from pytest_gpucheck.backends.timing import CudaEventTimer, RoundTimer
from pytest_gpucheck.backends.torch.backend import TorchEventTimer
from pytest_gpucheck.bench import session_ceiling, summary
from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.measure import RoundRunner, calibrate_iterations, warm_up
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.session_ceiling import apply_session_ceilings
from pytest_gpucheck.bench.summary import derived_figures, gate_markdown

US = 1e-6
#: A kernel whose device work (70 us, the H200's 48 MiB copy) outlasts its dispatch.
DISPATCH, WORK = 40 * US, 70 * US


class FakeDevice:
    """One stream on a simulated clock; a backend as far as the timers need one."""

    is_gpu = True
    device_index = 0

    def __init__(self, dispatch: float, work: float) -> None:
        self.dispatch, self.work = dispatch, work
        self.host = 0.0  # the host's clock
        self.free = 0.0  # when the device has done everything queued so far

    def clock(self) -> float:
        return self.host

    def call(self) -> FakeDevice:
        """One benchmarked call: the host dispatches it, then the device runs it; its
        result is ready once the device is done (``block_until_ready`` below)."""
        self.host += self.dispatch
        self.free = max(self.free, self.host) + self.work
        return self

    def stamp(self) -> float:
        """When an event recorded now completes: once the device has reached it."""
        return max(self.free, self.host)

    def synchronize(self) -> None:
        self.host = max(self.host, self.free)


class FakeEventTimer(CudaEventTimer):
    """The CUDA event timer the four CUDA backends subclass, on the fake device's events."""

    def __init__(self, device: FakeDevice) -> None:
        super().__init__(device)  # type: ignore[arg-type]  # a stand-in backend
        self.clock = device.clock
        self.device = device

    def _new_event(self) -> dict[str, float]:
        return {}

    def _record(self, event: Any) -> Any:
        event["at"] = self.device.stamp()
        return event

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        self.device.host = max(self.device.host, end["at"])  # waiting for the end event
        return float(end["at"] - start["at"])


def framework_timer(monkeypatch: pytest.MonkeyPatch, framework: str,
                    device: FakeDevice) -> RoundTimer:
    """CuPy's or PyTorch's own event timer, its framework replaced by one whose events
    are stamped on the fake device (milliseconds, as CUDA reports)."""

    class Event:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.at = 0.0

        def record(self, stream: Any = None) -> None:
            self.at = device.stamp()

        def synchronize(self) -> None:
            device.host = max(device.host, self.at)

        def elapsed_time(self, end: Event) -> float:
            return (end.at - self.at) * 1e3

    cuda = types.SimpleNamespace(Event=Event, get_current_stream=lambda: None,
                                 current_stream=lambda index: None,
                                 get_elapsed_time=lambda start, end: start.elapsed_time(end))
    monkeypatch.setitem(sys.modules, framework, types.SimpleNamespace(cuda=cuda))
    timer_class = CupyEventTimer if framework == "cupy" else TorchEventTimer
    timer = timer_class(device)  # type: ignore[arg-type]  # a stand-in backend
    timer.clock = device.clock
    return timer


class OneCallRounds(FakeEventTimer):
    """The old method: a round lasts at least 200 us, however long the dispatch."""

    @property
    def min_round_seconds(self) -> float:
        return 2e-4


def fake_jax(monkeypatch: pytest.MonkeyPatch, device: FakeDevice) -> ReadyTimer:
    """JAX's timer (host time until ``block_until_ready``) on the fake device."""
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(
        block_until_ready=lambda results: results[-1].synchronize()))
    timer = ReadyTimer(device, "wall")  # type: ignore[arg-type]
    timer.clock = device.clock
    return timer


class OneCallReady(ReadyTimer):
    @property
    def min_round_seconds(self) -> float:
        return 2e-3  # the old host timer's floor, whatever the dispatch


H200 = Environment("NVIDIA H200", "9.0", "580.95", "13.0", "numba-cuda", "0.30.4", "3.12.3")


def measure(timer: RoundTimer, device: FakeDevice, rounds: int = 12) -> BenchmarkRecord:
    """What the ``gpu_benchmark`` fixture does: warm up, calibrate, time rounds, record."""
    first = warm_up(timer, device.call, 2)
    runner = RoundRunner(timer, device.call, calibrate_iterations(timer, device.call))
    for _ in range(rounds):
        runner()
    return BenchmarkRecord("bench.py::test_copy[numba-cuda]", H200, timer.method,
                           list(runner.samples), runner.iterations, 2, first, False,
                           bytes=50_331_648, dispatch_samples=list(runner.dispatch))


def device_time_problem(record: BenchmarkRecord, work: float) -> str | None:
    """Why ``record``'s median is not the device's time per call (1.5% allowed: the first
    call's dispatch, at most 1% of a round, and rounding of the calls per round)."""
    if abs(record.median / work - 1) > 0.015:
        return (f"median {record.median / US:.1f} us for {work / US:.1f} us of device work "
                f"({record.iterations} call(s) per round)")
    return None


@pytest.mark.parametrize("timer_for", ["events", "cupy", "torch", "jax"])
def test_dispatch_is_not_billed_as_device_time(
        monkeypatch: pytest.MonkeyPatch, timer_for: str) -> None:
    new_device, old_device = FakeDevice(DISPATCH, WORK), FakeDevice(DISPATCH, WORK)
    old: RoundTimer = OneCallRounds(old_device)
    if timer_for == "events":
        new: RoundTimer = FakeEventTimer(new_device)
    elif timer_for in ("cupy", "torch"):
        new = framework_timer(monkeypatch, timer_for, new_device)
    else:
        new = fake_jax(monkeypatch, new_device)
        old = OneCallReady(old_device, "wall")  # type: ignore[arg-type]
        old.clock = old_device.clock

    record = measure(new, new_device)
    assert device_time_problem(record, WORK) is None, device_time_problem(record, WORK)
    # The dispatch is measured apart and shown beside the device time.
    assert record.launch_overhead == pytest.approx(DISPATCH)
    assert not record.dispatch_bound
    line = derived_figures(record)
    assert "launch overhead 40 us/call" in line, line
    assert "dispatch-bound" not in line, line
    assert record.as_dict()["launch_overhead"] == pytest.approx(DISPATCH)
    assert "| 40 us |" in gate_markdown([(record, None)], compared=False)

    # The old method bills the first dispatch to rounds too short for it: 83 us per call
    # (rounds of 3 calls, +19%) with events, +2% for JAX (its rounds of 2 ms): rejected.
    before = measure(old, old_device)
    problem = device_time_problem(before, WORK)
    assert problem is not None, before.median
    if timer_for != "jax":
        assert before.median == pytest.approx(250 / 3 * US)


def test_a_dispatch_bound_kernel_is_named_as_such() -> None:
    """The H200's numba-cuda copy, if its dispatch was 174 us for 70 us of device work:
    no round can queue calls ahead of the device, so the events time the host.  The old
    method printed 244 us as a device time; the record now says what it is."""
    old_device = FakeDevice(174 * US, WORK)
    before = measure(OneCallRounds(old_device), old_device)
    assert before.median == pytest.approx(244 * US)
    assert before.iterations == 1
    device = FakeDevice(174 * US, WORK)
    record = measure(FakeEventTimer(device), device)
    assert record.median == pytest.approx(174 * US, rel=0.02)
    assert record.launch_overhead == pytest.approx(174 * US)
    assert record.dispatch_bound
    assert "dispatch-bound: the device waited on the host's dispatch, so the device time " \
           "is at most this median" in derived_figures(record)
    table = gate_markdown([(record, None)], compared=False)
    assert "(dispatch-bound: device time at most this)" in table
    # A device-bound kernel with the same dispatch is not named so (the twin above).
    twin = FakeDevice(174 * US, 4 * 174 * US)
    assert not measure(FakeEventTimer(twin), twin).dispatch_bound


def test_a_stored_record_keeps_its_launch_overhead() -> None:
    device = FakeDevice(DISPATCH, WORK)
    record = measure(FakeEventTimer(device), device)
    loaded = BenchmarkRecord.from_dict(record.as_dict())
    assert loaded.dispatch_samples == record.dispatch_samples
    old = record.as_dict()
    del old["dispatch_samples"], old["launch_overhead"], old["dispatch_bound"]
    assert BenchmarkRecord.from_dict(old).launch_overhead is None  # files from before load


# -- the copy ceiling: one figure per device and size, whatever the framework ---------
MIB48 = 50_331_648


def gpu_record(backend: str, method: str, gbps: float, ceiling_gbps: float,
               device: str = "NVIDIA H200", nbytes: int = MIB48) -> BenchmarkRecord:
    """A GPU record moving ``nbytes`` at ``gbps``, its own paired copy at ``ceiling_gbps``."""
    env = Environment(device, "9.0", "580.95", "13.0", backend, "1", "3.12.3")
    return BenchmarkRecord(f"bench.py::test_sum[{backend}]", env, method,
                           [nbytes / gbps / 1e9] * 5, 10, 2, 0.1, False, bytes=nbytes,
                           ceiling_gbps=ceiling_gbps, ceiling_bytes=nbytes)


def ceiling_problems(records: list[BenchmarkRecord]) -> list[str]:
    """Where a record's ceiling is not the best copy of its bytes on its device by any
    GPU framework of the session."""
    best: dict[tuple[str, int], float] = {}
    for record in records:
        key = (record.environment.device_model, int(record.ceiling_bytes or 0))
        best[key] = max(best.get(key, 0.0), record.ceiling_gbps or 0.0)
    return [f"{record.name}: ceiling {record.ceiling} GB/s, best copy {expected} GB/s"
            for record in records
            if record.ceiling != (expected := best[(record.environment.device_model,
                                                     int(record.ceiling_bytes or 0))])]


def h200_session() -> list[BenchmarkRecord]:
    """The H200's test_sum: JAX's own copy (1.48 TB/s) made its kernel read 110%."""
    return [gpu_record("cupy", "cuda-events", 1470, 3790),
            gpu_record("jax-gpu", "wall+block_until_ready", 1620, 1480),
            gpu_record("numba-cuda", "cuda-events", 806, 1100),
            # Another size and another device keep their own ceilings.
            gpu_record("cupy", "cuda-events", 900, 2000, nbytes=MIB48 // 4),
            gpu_record("cupy", "cuda-events", 800, 2950, device="NVIDIA H100 80GB HBM3")]


def test_the_ceiling_is_the_best_copy_of_the_size_on_the_device_by_any_framework() -> None:
    records = h200_session()
    apply_session_ceilings(records)
    assert ceiling_problems(records) == []
    jax = records[1]
    assert jax.ceiling == 3790
    assert jax.session_ceiling is not None
    assert jax.session_ceiling.best_from == "bench.py::test_sum[cupy] [cupy]"
    assert "(43% of the 3.79e+03 GB/s copy ceiling)" in derived_figures(jax)
    assert records[3].ceiling == 2000
    assert records[4].ceiling == 2950


def test_the_check_rejects_a_ceiling_per_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old regime: copies of one timing method only (JAX's apart from CUDA events)."""
    monkeypatch.setattr(session_ceiling, "_regime", lambda record: (
        (record.environment.device_model, record.method, int(record.ceiling_bytes))
        if record.ceiling_gbps and record.ceiling_bytes else None))
    records = h200_session()
    apply_session_ceilings(records)
    assert [problem.split(": ")[0] for problem in ceiling_problems(records)] == [
        "bench.py::test_sum[jax-gpu]"]


def test_cpu_copies_timed_on_other_clocks_stay_apart() -> None:
    """CPU time and wall time are not one clock: no ceiling across them."""
    cpu = Environment("some CPU", "", "", "", "numpy", "2", "3.12.3")
    process = BenchmarkRecord("b.py::t[numpy]", cpu, "process+synchronize", [1e-3], 1, 0,
                              0.0, False, bytes=10**6, ceiling_gbps=4.0, ceiling_bytes=10**6)
    wall = BenchmarkRecord("b.py::t[torch-cpu]", cpu, "wall+synchronize", [1e-3], 1, 0, 0.0,
                           False, bytes=10**6, ceiling_gbps=9.0, ceiling_bytes=10**6)
    apply_session_ceilings([process, wall])
    assert (process.ceiling, wall.ceiling) == (4.0, 9.0)


def names_a_measurement_error(record: BenchmarkRecord) -> str | None:
    """Why the terminal line and the Markdown table do not call ``record`` a measurement
    error (it is faster than the best copy of its bytes on its device)."""
    line = derived_figures(record)
    table = gate_markdown([(record, None)], compared=False)
    if "MEASUREMENT ERROR, not a faster kernel" not in line or "%" in line.split("GB/s")[1]:
        return f"the line reads: {line}"
    if "MEASUREMENT ERROR" not in table:
        return f"the table reads: {table}"
    return None


def test_a_kernel_above_the_ceiling_is_named_a_measurement_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200's jax-gpu laplacian read 120% and was explained away ("no bound")."""
    records = [gpu_record("cupy", "cuda-events", 1000, 3790),
               gpu_record("jax-gpu", "wall+block_until_ready", 4000, 1480)]
    apply_session_ceilings(records)
    jax = records[1]
    assert names_a_measurement_error(jax) is None, names_a_measurement_error(jax)
    assert "the best of 2 copies of the same bytes on this device measured 3.79e+03 GB/s" \
        in derived_figures(jax)
    # The old wording named only CUDA-event records: the check rejects it.
    monkeypatch.setattr(summary, "above_a_device_copy",
                        lambda record: record.method == "cuda-events"
                        and (record.fraction_of_ceiling or 0.0) > 1.0)
    problem = names_a_measurement_error(jax)
    assert problem is not None
    assert "so it is no bound" in problem, problem


# -- as a user runs it: a pytest session with the plugin ------------------------------
SIMULATED_GPU = '''
from pytest_gpucheck.backends.timing import CudaEventTimer


class Device:
    """A stream on a simulated clock: 40 us of host dispatch, then 70 us of work."""

    def __init__(self):
        self.host = self.free = 0.0

    def clock(self):
        return self.host

    def call(self):
        self.host += 40e-6
        self.free = max(self.free, self.host) + 70e-6
        return self

    def synchronize(self):
        self.host = max(self.host, self.free)


DEVICE = Device()


class Timer(CudaEventTimer):
    """CUDA events on the simulated stream (the CUDA backends' timer, its events faked)."""

    def __init__(self, backend):
        super().__init__(backend)
        self.clock = DEVICE.clock

    def _new_event(self):
        return {}

    def _record(self, event):
        event["at"] = max(DEVICE.free, DEVICE.host)
        return event

    def _elapsed_seconds(self, start, end):
        DEVICE.host = max(DEVICE.host, end["at"])
        return end["at"] - start["at"]


class OldTimer(Timer):
    """Rounds of 0.2 ms, whatever the dispatch (before issue 28)."""

    @property
    def min_round_seconds(self):
        return 2e-4
'''

USER_CONFTEST = '''
import os

import pytest

from pytest_gpucheck.backends import get_backend
from simulated_gpu import DEVICE, OldTimer, Timer


@pytest.fixture(autouse=True)
def simulated_gpu(monkeypatch):
    """NumPy's backend timed like a CUDA backend, on the simulated stream."""
    timer = OldTimer if os.environ.get("OLD_ROUNDS") == "1" else Timer
    backend = type(get_backend("numpy"))
    monkeypatch.setattr(backend, "event_timer", lambda self, clock: timer(self))
    monkeypatch.setattr(backend, "synchronize", lambda self: DEVICE.synchronize())
'''

USER_TEST = '''
from simulated_gpu import DEVICE


def test_kernel(gpu_benchmark):
    gpu_benchmark.pedantic(DEVICE.call, rounds=12)
'''


def user_run_problem(pytester: pytest.Pytester) -> str | None:
    """Run the user's project; why its printed and stored figures are not the device time
    (70 us) with the launch overhead (40 us) beside it."""
    import json

    result = pytester.runpytest("-p", "no:cacheprovider", "--gpu-backends=numpy",
                                "--gpu-report=report.json", "--benchmark-json=bench.json")
    result.assert_outcomes(passed=1)
    (record,) = [r["record"] for r in json.loads(
        (pytester.path / "report.json").read_text())["sections"]["benchmarks"]["results"]]
    (bench,) = json.loads((pytester.path / "bench.json").read_text())["benchmarks"]
    line = next(line for line in result.outlines if "test_kernel [numpy" in line)
    if abs(record["median"] / (70 * US) - 1) > 0.015:
        return f"median {record['median'] / US:.1f} us: {line}"
    if "launch overhead 40 us/call" not in line:
        return f"no launch overhead: {line}"
    if bench["extra_info"]["gpucheck"]["launch_overhead"] != pytest.approx(40 * US):
        return f"pytest-benchmark's JSON: {bench['extra_info']['gpucheck']}"
    return None


def test_a_user_run_prints_device_time_and_launch_overhead(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(simulated_gpu=SIMULATED_GPU)
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_user=USER_TEST)
    assert user_run_problem(pytester) is None
    monkeypatch.setenv("OLD_ROUNDS", "1")
    problem = user_run_problem(pytester)
    assert problem is not None
    assert problem.startswith("median 83.3 us"), problem
