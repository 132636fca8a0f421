"""The pieces of ``--gpu-bench-against`` that need no pytest run of their own: the CPU
pinning, the allocator setting and the baseline's import redirect."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from user_runs import REPO, start_command

from pytest_gpucheck.bench.interleave import CheckoutImports, shared_cpu

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux affinity")


@dataclass
class Kind:
    """What shared_cpu reads of a backend."""

    is_gpu: bool
    single_threaded: bool


@linux
def test_shared_cpu_pins_both_processes_to_one_cpu_and_puts_them_back() -> None:
    sleeper = start_command([sys.executable, "-c", "import time; time.sleep(60)"], REPO,
                            output=False)
    try:
        before = os.sched_getaffinity(sleeper.pid), os.sched_getaffinity(0)
        with shared_cpu(Kind(False, True), (sleeper.pid, os.getpid())):  # type: ignore[arg-type]
            inside = os.sched_getaffinity(sleeper.pid)
            assert len(inside) == 1
            assert os.sched_getaffinity(0) == inside
        assert (os.sched_getaffinity(sleeper.pid), os.sched_getaffinity(0)) == before
    finally:
        sleeper.kill()
        sleeper.wait()


@linux
@pytest.mark.parametrize("kind", [Kind(True, True), Kind(False, False)],
                         ids=["gpu", "thread-pool"])
def test_gpu_and_thread_pool_backends_are_not_pinned(kind: Kind) -> None:
    before = os.sched_getaffinity(0)
    with shared_cpu(kind, (os.getpid(),)):  # type: ignore[arg-type]
        assert os.sched_getaffinity(0) == before


def test_the_baseline_imports_its_own_checkout(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A top-level module that resolves into the lead's checkout (what an editable
    install does) is loaded from the same file of the baseline's checkout."""
    lead, checkout = tmp_path / "lead", tmp_path / "base"
    for root, version in ((lead, "candidate"), (checkout, "baseline")):
        (root / "src" / "gpucheck_demo_kern").mkdir(parents=True)
        (root / "src" / "gpucheck_demo_kern" / "__init__.py").write_text(
            "from .impl import VERSION\n")
        (root / "src" / "gpucheck_demo_kern" / "impl.py").write_text(f"VERSION = {version!r}\n")
    monkeypatch.syspath_prepend(str(lead / "src"))  # the editable install's path entry
    names = ("gpucheck_demo_kern", "gpucheck_demo_kern.impl")
    try:
        # The control: without the redirect the baseline would time the candidate.
        assert importlib.import_module("gpucheck_demo_kern").VERSION == "candidate"
        for name in names:
            sys.modules.pop(name, None)
        finder = CheckoutImports(lead, checkout)
        monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
        module = importlib.import_module("gpucheck_demo_kern")
        assert module.VERSION == "baseline"
        assert Path(str(module.__file__)).is_relative_to(checkout)
        # Modules outside the lead's checkout are left alone.
        assert finder.find_spec("json") is None
    finally:
        for name in names:
            sys.modules.pop(name, None)


class CountingTimer:
    """A round timer that counts the kernel calls it is asked to time."""

    min_round_seconds = 1e-3
    dispatch_per_call = None

    def __init__(self) -> None:
        self.calls = 0

    def time_round(self, call: object, calls: int) -> tuple[float, None]:
        self.calls += calls
        return 1e-5 * calls, None


def test_a_peer_runs_the_calibration_calls_only_where_the_lead_calibrated() -> None:
    # Both sides of a pair run the calibration's calls so that they enter their rounds
    # equally warm; where the test fixed its calls per round the lead calibrated nothing,
    # and each process of ~60 a benchmark spent the calibration's calls (seconds for a
    # kernel of a second) for nothing.
    from types import SimpleNamespace

    from pytest_gpucheck.bench.serve import ForTheLead

    timing = ForTheLead(SimpleNamespace(iterations=7))  # type: ignore[arg-type]
    timer = CountingTimer()
    assert timing.calls_per_round(timer, lambda: None, asked=7) == 7
    assert timer.calls == 0
    assert timing.calls_per_round(timer, lambda: None, asked=None) == 7
    assert timer.calls > 0
