#!/usr/bin/env python3
"""The GPU tier's first step: the riskiest claims, measured and written down first.

``scripts/run_gpu_tier.sh`` runs this alone before any other step (budget 90 s), so its
figures exist even if every later step fails or the machine is taken back.  For each
backend named in ``--backends`` it writes, one line per figure to ``probe.txt`` (and the
same as JSON to ``probe.json``, rewritten after each figure):

* ``xp``: the device of ``xp.ones(3)``, ``xp.asarray([1.0])`` and ``xp.fft.fftfreq(4)``
  against the device of the backend's own arrays (``gpu_backend.to_device``); a
  backend whose ``xp`` creates arrays elsewhere, or has no ``xp`` where it should (a
  missing array-api-compat), is WRONG;
* ``copy`` (the framework's own device-to-device copy, ``Backend.copy``) of 4 KiB and of
  the bundled copy benchmark's 128 MiB, and ``kernel`` (the bundled ``vector_add`` of
  2**25 float32): the host's dispatch per call and the device time per call, each as
  the ``gpu_benchmark`` fixture's round timer measures them (k calls back to back
  between two events; ``dispatch-bound`` where the dispatch is not clearly below the
  device time, so that the events timed the host);
* ``cupyx``: the fixture's round timer on a CuPy saxpy of 2**27 float32 against
  ``cupyx.profiler.benchmark``'s GPU time (``scripts/check_device_timing.py`` does the
  same through a pytest session, after the benchmarks).

Exit status 1 if a named backend cannot run or an ``xp`` check is WRONG, else 0: the
timing figures are findings, judged by the later steps.  ``--dry-run`` sizes down for
the CPU tier.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
#: Rounds timed per figure after the warm-up and calibration (the fixture's method).
ROUNDS = 7
COPY_ELEMENTS = 1 << 25      # the bundled copy benchmark's 128 MiB
SMALL_COPY_ELEMENTS = 1 << 10  # 4 KiB: all dispatch
KERNEL_ELEMENTS = 1 << 25
CUPYX_ELEMENTS = 1 << 27


class Probe:
    """Figures written as they come: a line to probe.txt, the whole list to probe.json."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.text = out / "probe.txt"
        self.json = out / "probe.json"
        self.text.write_text("")
        self.figures: list[dict[str, Any]] = []
        self.failed = False

    def write(self, kind: str, backend: str, line: str, *, wrong: bool = False,
              **figures: Any) -> None:
        if wrong:
            self.failed = True
        entry = {"kind": kind, "backend": backend, "line": line, "wrong": wrong, **figures}
        self.figures.append(entry)
        text = f"{kind} {backend}: {line}"
        print(text, flush=True)
        with self.text.open("a") as handle:
            handle.write(text + "\n")
        temporary = self.json.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.figures, indent=1, default=str))
        temporary.replace(self.json)


def device_of(array: Any) -> str:
    """The device an array lives on, as one string (the standard's ``device(x)``)."""
    try:
        import array_api_compat

        return str(array_api_compat.device(array))
    except (ImportError, TypeError, ValueError):
        return str(getattr(array, "device", "?"))


def check_xp(probe: Probe, backend: Any) -> None:
    """Where ``xp``'s creation functions put arrays, against the backend's own arrays."""
    from pytest_gpucheck.backends.base import BackendUnavailable

    if backend.module is None:
        probe.write("xp", backend.name, "no array namespace (by design: use gpu_backend)")
        return
    try:
        xp = backend.xp
    except BackendUnavailable as exc:
        probe.write("xp", backend.name, f"WRONG: no xp: {exc}", wrong=True)
        return
    want = device_of(backend.to_device(np.ones(1, dtype=np.float32)))
    made = {"ones(3)": xp.ones(3), "asarray([1.0])": xp.asarray([1.0]),
            "fft.fftfreq(4)": xp.fft.fftfreq(4)}
    found = {name: device_of(array) for name, array in made.items()}
    wrong = [name for name, device in found.items() if device != want]
    probe.write("xp", backend.name, ", ".join(f"{name} on {device}"
                                              for name, device in found.items())
                + f" (the backend's arrays: {want})"
                + (f": WRONG: {', '.join(wrong)} elsewhere" if wrong else ": ok"),
                wrong=bool(wrong), devices=found, want=want)


def timed(backend: Any, call: Callable[[], Any]) -> dict[str, Any]:
    """The fixture's method on ``call``: warm up, calibrate, ROUNDS rounds."""
    from pytest_gpucheck.bench.measure import RoundRunner, calibrate_iterations, warm_up
    from pytest_gpucheck.bench.records import DISPATCH_BOUND

    timer = backend.event_timer("wall")
    warm_up(timer, call, 2)
    runner = RoundRunner(timer, call, calibrate_iterations(timer, call))
    for _ in range(ROUNDS):
        runner()
    median = statistics.median(runner.samples)
    dispatch = statistics.median(runner.dispatch) if runner.dispatch else None
    return {"method": timer.method, "iterations": runner.iterations, "median_s": median,
            "dispatch_s": dispatch,
            # As BenchmarkRecord.dispatch_bound says it: the device waited on the host.
            "dispatch_bound": dispatch is not None and dispatch >= DISPATCH_BOUND * median}


def line_of(figure: dict[str, Any]) -> str:
    text = (f"{figure['median_s'] * 1e6:.1f} us per call ({figure['method']}, "
            f"{figure['iterations']} call(s) per round)")
    if figure["dispatch_s"] is not None:
        text += f", dispatch {figure['dispatch_s'] * 1e6:.1f} us per call"
        if figure["dispatch_bound"]:
            text += ": DISPATCH-BOUND (the device time is at most the median)"
    return text


def check_copy(probe: Probe, backend: Any, elements: int, label: str) -> None:
    src = backend.to_device(np.ones(elements, dtype=np.float32))
    dst = backend.empty((elements,), np.float32)
    figure = timed(backend, lambda: backend.copy(src, dst))
    probe.write("copy", backend.name, f"{label}: " + line_of(figure), bytes=2 * 4 * elements,
                **figure)


def check_kernel(probe: Probe, backend: Any, elements: int) -> None:
    from pytest_gpucheck.registry import implementations

    found = sorted(implementations(kernel="vector_add", backend=backend.name),
                   key=lambda impl: (impl.origin != "bundled", impl.name))
    if not found:
        probe.write("kernel", backend.name, "no vector_add registered")
        return
    impl = found[0]
    a = backend.to_device(np.ones(elements, dtype=np.float32))
    b = backend.to_device(np.ones(elements, dtype=np.float32))
    kwargs: dict[str, Any] = {}
    if impl.writes_out:
        kwargs["out"] = backend.empty((elements,), np.float32)
    if impl.takes_launch:
        from pytest_gpucheck.checking.kernel_launch import LaunchConfig

        kwargs["launch"] = LaunchConfig(grid=((elements + 255) // 256,), block=(256,))
    figure = timed(backend, lambda: impl.func(a, b, **kwargs))
    probe.write("kernel", backend.name, f"vector_add of {elements} float32: " + line_of(figure),
                **figure)


def check_cupyx(probe: Probe, dry_run: bool) -> None:
    """The fixture's round timer against cupyx.profiler.benchmark on one CuPy kernel."""
    sys.path.insert(0, str(HERE))
    import check_device_timing as timing

    from pytest_gpucheck.backends import get_backend

    name = "numpy" if dry_run else "cupy"
    elements = CUPYX_ELEMENTS >> 8 if dry_run else CUPYX_ELEMENTS
    backend = get_backend(name)
    figure = timed(backend, timing.saxpy(name, elements))
    if dry_run:
        probe.write("cupyx", name, "dry run: " + line_of(figure) + "; no CuPy to compare with",
                    **figure)
        return
    gpu, cpu, how = timing.reference_times(elements)
    ratio = figure["median_s"] / gpu
    probe.write("cupyx", name, f"saxpy of {elements} float32: round timer " + line_of(figure)
                + f"; {how} GPU time {gpu * 1e6:.1f} us (its CPU time {cpu * 1e6:.1f} us): "
                f"ratio {ratio:.3f}", ratio=ratio, reference_s=gpu, **figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", required=True, help="comma-separated backend names")
    parser.add_argument("--out", type=Path, required=True, help="folder for probe.txt/.json")
    parser.add_argument("--dry-run", action="store_true", help="CPU-tier sizes")
    args = parser.parse_args()
    from pytest_gpucheck.backends import get_backend

    probe = Probe(args.out)
    shift = 5 if args.dry_run else 0
    started = time.perf_counter()
    backends = []
    for name in args.backends.split(","):
        backend = get_backend(name)
        result = backend.probe()
        if not result.available:
            probe.write("backend", name, f"WRONG: cannot run here: {result.reason}", wrong=True)
            continue
        probe.write("backend", name, f"{result.version} on {result.device}")
        backends.append(backend)
    # The cheap checks first, for every backend, then the timings.
    for backend in backends:
        try:
            check_xp(probe, backend)
        except Exception:  # every figure that can be had is written
            probe.write("xp", backend.name, "WRONG: " + traceback.format_exc(limit=2)
                        .strip().splitlines()[-1], wrong=True)
    steps: list[tuple[str, Callable[[Any], None]]] = [
        ("copy", lambda b: check_copy(probe, b, SMALL_COPY_ELEMENTS, "4 KiB")),
        ("copy", lambda b: check_copy(probe, b, COPY_ELEMENTS >> shift, "128 MiB"
                                      if not shift else f"{(COPY_ELEMENTS >> shift) * 4} B")),
        ("kernel", lambda b: check_kernel(probe, b, KERNEL_ELEMENTS >> shift)),
    ]
    for kind, step in steps:
        for backend in backends:
            try:
                step(backend)
            except Exception:  # a finding, written; the rest still runs
                probe.write(kind, backend.name, "could not be measured: " + traceback
                            .format_exc(limit=2).strip().splitlines()[-1])
    if args.dry_run or any(backend.name == "cupy" for backend in backends):
        try:
            check_cupyx(probe, args.dry_run)
        except Exception:  # a finding, written
            probe.write("cupyx", "cupy", "could not be measured: " + traceback
                        .format_exc(limit=2).strip().splitlines()[-1])
    probe.write("done", "all", f"in {time.perf_counter() - started:.1f} s"
                + ("; WRONG figures above" if probe.failed else ""))
    return 1 if probe.failed else 0


if __name__ == "__main__":
    sys.exit(main())
