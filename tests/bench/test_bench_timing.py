"""Round timers measure the device's work, not the launch; calibration and the clock."""

from __future__ import annotations

import sys
import threading
import time
import types
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.backends.cupy.backend import CupyEventTimer
from pytest_gpucheck.backends.jax.backend import ReadyTimer
from pytest_gpucheck.backends.numpy.backend import NumpyBackend
from pytest_gpucheck.backends.torch.backend import TorchEventTimer
from pytest_gpucheck.bench.measure import DeviceClock, RoundRunner, calibrate_iterations
from pytest_gpucheck.bench.timing import RoundTimer, host_clock_for, timer_for

WORK = 0.03  # seconds of "device" work per launch


class AsyncBackend(NumpyBackend):
    """A backend whose launches return at once and whose work finishes later, like a GPU."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[threading.Thread] = []

    def launch(self) -> None:
        worker = threading.Thread(target=time.sleep, args=(WORK,))
        worker.start()
        self.pending.append(worker)

    def synchronize(self) -> None:
        while self.pending:
            self.pending.pop().join()


class QueuedDevice(NumpyBackend):
    """A device on a clock of its own: a launch queues WORK seconds and returns at once;
    the clock moves only when the host waits (``synchronize``).  A timer that reads this
    clock measures exactly the work it waited for, whatever the machine's load (the
    thread-and-sleep device above overshoots under load, and once let an unsynchronized
    timer reach the synchronized one's figure)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.done_at = 0.0

    def launch(self) -> None:
        self.done_at = max(self.now, self.done_at) + WORK

    def synchronize(self) -> None:
        self.now = max(self.now, self.done_at)

    def clock(self) -> float:
        return self.now


class UnsynchronizedTimer(RoundTimer):
    """The classic benchmarking bug: time the launches, not the work."""

    def time_round(self, run: Any, iterations: int) -> tuple[float, Any]:
        start = self.clock()
        for _ in range(iterations):
            run()
        return self.clock() - start, None


def measured_work(timer: RoundTimer, device: QueuedDevice) -> float:
    """Seconds the timer gives three launches in order, each waiting for the previous
    one (as on one stream), read on the device's own clock."""
    timer.clock = device.clock

    def launch_in_order() -> None:
        device.synchronize()
        device.launch()

    elapsed, _ = timer.time_round(launch_in_order, 3)
    return elapsed


def test_host_timer_synchronizes_and_an_unsynchronized_one_is_caught() -> None:
    device = QueuedDevice()
    assert measured_work(RoundTimer(device, "wall"), device) == pytest.approx(3 * WORK)
    # The broken twin stops the clock before the last launch's work is done.
    device = QueuedDevice()
    assert measured_work(UnsynchronizedTimer(device, "wall"), device) == pytest.approx(2 * WORK)


class FakeReady:
    """Stands in for a jax.Array: ready once its thread finishes."""

    def __init__(self) -> None:
        self.thread = threading.Thread(target=time.sleep, args=(WORK,))
        self.thread.start()

    def block_until_ready(self) -> FakeReady:
        self.thread.join()
        return self


def test_jax_timer_waits_for_every_result_of_the_round() -> None:
    pytest.importorskip("jax")
    timer = ReadyTimer(NumpyBackend(), "wall")
    elapsed, result = timer.time_round(FakeReady, 3)
    # Three concurrent WORK-long results: at least one WORK, and the last result returned.
    assert elapsed >= WORK * 0.95
    assert isinstance(result, FakeReady)
    assert not result.thread.is_alive()


def _fake_event_module(monkeypatch: pytest.MonkeyPatch, name: str, log: list[str]) -> None:
    """A stand-in for cupy or torch whose events log what is done to them."""

    class Event:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.time = None
            self.synchronized = False
            log.append(f"new {kwargs}")

        def record(self, stream: Any = None) -> None:
            self.time = time.perf_counter()
            log.append(f"record on {stream}")

        def synchronize(self) -> None:
            self.synchronized = True
            log.append("synchronize")

        def elapsed_time(self, end: Event) -> float:
            assert end.synchronized, "read before the end event completed"
            return (end.time - self.time) * 1e3  # milliseconds, as CUDA reports

    cuda = types.SimpleNamespace(
        Event=Event,
        get_current_stream=lambda: "cupy-current-stream",
        current_stream=lambda device: f"torch-stream-{device}",
        get_elapsed_time=lambda start, end: start.elapsed_time(end),
    )
    monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(cuda=cuda))


@pytest.mark.parametrize(("timer_class", "module", "stream"), [
    (CupyEventTimer, "cupy", "cupy-current-stream"),
    (TorchEventTimer, "torch", "torch-stream-0"),
])
def test_event_timers_record_on_the_stream_and_convert_milliseconds(
    monkeypatch: pytest.MonkeyPatch, timer_class: type[RoundTimer], module: str, stream: str
) -> None:
    """Plumbing only: the real CUDA events need a GPU (never run here)."""
    log: list[str] = []
    _fake_event_module(monkeypatch, module, log)
    timer = timer_class(NumpyBackend())
    elapsed, result = timer.time_round(lambda: time.sleep(0.01) or "done", 2)
    assert result == "done"
    assert 0.02 * 0.9 <= elapsed < 1.0  # seconds, not milliseconds
    assert log.count(f"record on {stream}") == 2
    assert log[-1] == "synchronize"
    if module == "torch":
        assert "new {'enable_timing': True}" in log
    assert timer.method == "cuda-events"


def test_clock_choice_per_backend() -> None:
    from pytest_gpucheck.backends import get_backend

    assert host_clock_for(get_backend("numpy")) == "process"
    assert host_clock_for(get_backend("numba-cudasim")) == "process"
    for name in ("torch-cpu", "jax-cpu", "numba-cpu"):
        assert host_clock_for(get_backend(name)) == "wall"
        assert host_clock_for(get_backend(name), "process") == "process"
    assert host_clock_for(get_backend("jax-gpu"), "process") == "wall"
    assert timer_for(get_backend("cupy")).method == "cuda-events"
    assert timer_for(get_backend("jax-gpu")).method == "wall+block_until_ready"
    with pytest.raises(ValueError, match="unknown CPU clock"):
        host_clock_for(get_backend("numpy"), "tsc")


def test_one_thread_pools_of_the_gate_are_timed_in_cpu_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process the gate measures with one-thread pools (its lead's variable),
    numba-cpu and torch-cpu run on the calling thread: CPU time, as NumPy.  JAX's
    runtime keeps threads of its own (not claimed); a user's own OMP_NUM_THREADS=1 is
    not the gate's and changes nothing (a plain run's records keep their clock)."""
    from pytest_gpucheck.backends import get_backend
    from pytest_gpucheck.bench.timing import THREADS_VARIABLE

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    for name in ("torch-cpu", "numba-cpu", "jax-cpu"):
        assert host_clock_for(get_backend(name)) == "wall"
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    for name in ("torch-cpu", "numba-cpu", "numpy"):
        assert host_clock_for(get_backend(name)) == "process"
        assert host_clock_for(get_backend(name), "wall") == "wall"
    assert host_clock_for(get_backend("jax-cpu")) == "wall"
    monkeypatch.setenv(THREADS_VARIABLE, "2")  # pools of two: idle workers spin
    assert host_clock_for(get_backend("torch-cpu")) == "wall"


def test_process_clock_ignores_time_spent_waiting() -> None:
    """Why CPU time is robust to neighbours, and what it cannot see (documented)."""
    elapsed, _ = RoundTimer(NumpyBackend(), "process").time_round(lambda: time.sleep(0.05), 1)
    assert elapsed < 0.025


def test_calibration_makes_rounds_long_enough() -> None:
    timer = RoundTimer(NumpyBackend(), "wall")
    data = np.ones(1000)
    iterations = calibrate_iterations(timer, lambda: data.sum())
    elapsed, _ = timer.time_round(lambda: data.sum(), iterations)
    assert iterations > 1
    assert elapsed >= timer.min_round_seconds * 0.5


def test_runner_feeds_per_call_device_time_to_the_clock() -> None:
    backend = AsyncBackend()
    runner = RoundRunner(RoundTimer(backend, "wall"), backend.launch, iterations=2)
    clock = runner.clock
    before = clock()
    runner()
    assert clock() - before == pytest.approx(runner.samples[0])
    assert runner.samples[0] >= WORK * 0.95 / 2  # per call: both overlapped launches waited for
    assert isinstance(clock, DeviceClock)
    assert clock.__name__ == "gpucheck[wall+synchronize]"
