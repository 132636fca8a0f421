#!/usr/bin/env python3
"""Check on a GPU that ``gpu_benchmark`` times device work, not host dispatch.

Two comparisons, each printed on one line with its verdict (exit status 1 if one
fails, 2 if this machine cannot run them):

* the copy: numba-cuda's device-to-device copy of the bundled benchmarks' bytes
  (``test_copy``: two 128 MiB float32 vectors) within 10% of CuPy's, both timed by
  the fixture, where both are device-bound.  What the check claims is the fixture's:
  a round of k calls back to back between two events times the device's work when
  each call's host dispatch is shorter than its device time (the calls queue ahead of
  the device, and the first dispatch is under 1% of the round); where it is not, the
  device waits on the host, no event pair can exclude the dispatch, and the fixture
  names the record dispatch-bound (its median the host's dispatch rate, an upper
  bound of the device time).  numba-cuda's ``copy_to_device`` is such a copy on an
  H200: 105-200 us of host dispatch per call whatever the size (131 to 262 us for 50
  to 402 MB where CuPy took 14 to 100 us).  A dispatch-bound copy is therefore a
  FINDING, printed with its dispatch and its bound, not a failure: comparing it with
  CuPy's device time would compare the host with the device;
* a CuPy kernel (an ``ElementwiseKernel`` saxpy of 2**27 float32): the fixture's
  median within 3% of the GPU time ``cupyx.profiler.benchmark`` gives it.  Each
  repeat of ``cupyx.profiler.benchmark`` times one call after a synchronization, so
  its GPU time holds one dispatch too (its CPU time is printed beside it); the
  kernel is large enough (about 1.6 GB moved) that one dispatch is under 1% of it.

The fixture runs as a user runs it: a pytest session on a generated test file
(``--gpu-backends=cupy,numba-cuda --gpu-report=...``) whose records are read back.
``scripts/run_gpu_tier.sh`` runs this script alone, after the benchmarks, as the step
``device-timing``.  ``--dry-run`` runs the same path on the CPU tier (NumPy and
numba-cpu; a host-timed loop stands in for ``cupyx.profiler.benchmark``) and gives no
verdict: CPU times say nothing of a GPU's dispatch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
#: The bundled copy benchmark's vectors (``conformance/bench_kernels.py``, GPU size).
COPY_ELEMENTS = 1 << 25
#: The CuPy kernel's vectors: three of 512 MiB, so one dispatch is under 1% of a call.
KERNEL_ELEMENTS = 1 << 27
COPY_TOLERANCE = 0.10
KERNEL_TOLERANCE = 0.03
REFERENCE_REPEATS = 200

TESTS = '''
import numpy as np
import pytest

import check_device_timing as check
from pytest_gpucheck.bench.device_copy import device_copy


def test_copy(gpu_benchmark, gpu_backend):
    n = check.copy_elements()
    host = np.ones(n, dtype=np.float32)
    src = gpu_backend.to_device(host)
    dst = gpu_backend.empty((n,), np.float32)
    result = gpu_benchmark.pedantic(lambda: device_copy(gpu_backend, src, dst),
                                    bytes=2 * host.nbytes, flops=0)
    np.testing.assert_array_equal(gpu_backend.to_host(result), host)


def test_kernel(gpu_benchmark, gpu_backend):
    if gpu_backend.name != check.kernel_backend():
        pytest.skip("the kernel is timed on " + check.kernel_backend() + " only")
    n = check.kernel_elements()
    gpu_benchmark.pedantic(check.saxpy(gpu_backend.name, n), bytes=12 * n, flops=2 * n)
'''


def dry_run() -> bool:
    return os.environ.get("GPUCHECK_TIMING_DRY_RUN") == "1"


def copy_backends() -> tuple[str, str]:
    """(the reference framework, the one checked against it)."""
    return ("numpy", "numba-cpu") if dry_run() else ("cupy", "numba-cuda")


def kernel_backend() -> str:
    return "numpy" if dry_run() else "cupy"


def copy_elements() -> int:
    return COPY_ELEMENTS >> 4 if dry_run() else COPY_ELEMENTS


def kernel_elements() -> int:
    return KERNEL_ELEMENTS >> 8 if dry_run() else KERNEL_ELEMENTS


def saxpy(backend: str, n: int) -> Callable[[], Any]:
    """``out = 2.5 * x + y`` on ``n`` float32, as one call (the same in both processes)."""
    if backend == "cupy":
        import cupy

        kernel = cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z",
                                        "z = a * x + y", "gpucheck_timing_saxpy")
        x = cupy.full(n, 1.5, dtype=cupy.float32)
        y = cupy.full(n, 0.5, dtype=cupy.float32)
        out = cupy.empty_like(x)
        alpha = np.float32(2.5)
        return lambda: kernel(alpha, x, y, out)
    x = np.full(n, 1.5, dtype=np.float32)
    y = np.full(n, 0.5, dtype=np.float32)
    out = np.empty_like(x)

    def numpy_saxpy() -> Any:
        np.multiply(x, np.float32(2.5), out=out)
        return np.add(out, y, out=out)

    return numpy_saxpy


def reference_times(n: int) -> tuple[float, float, str]:
    """(median GPU seconds per call, median CPU seconds per call, what timed them)."""
    call = saxpy(kernel_backend(), n)
    if dry_run():
        for _ in range(3):
            call()
        times = []
        for _ in range(REFERENCE_REPEATS):
            start = time.process_time()
            call()
            times.append(time.process_time() - start)
        return float(np.median(times)), float(np.median(times)), "a process-time loop"
    from cupyx.profiler import benchmark

    result = benchmark(call, n_repeat=REFERENCE_REPEATS, n_warmup=10)
    # gpu_times: (devices, repeats) in seconds (one row per device given; 1-D before v10).
    gpu = np.atleast_2d(np.asarray(result.gpu_times))[0]
    return (float(np.median(gpu)), float(np.median(result.cpu_times)),
            "cupyx.profiler.benchmark")


def run_fixture(work: Path) -> dict[str, dict[str, Any]]:
    """Run the generated tests with the plugin; their records by test name."""
    (work / "test_device_timing.py").write_text(TESTS)
    report = work / "report.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]))
    command = [sys.executable, "-m", "pytest", "test_device_timing.py", "-p", "no:cacheprovider",
               "-q", "-rfEs", f"--gpu-backends={','.join(copy_backends())}",
               f"--gpu-report={report}"]
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, cwd=work, env=env, check=False, text=True,
                          capture_output=True)
    print(done.stdout[-6000:] + done.stderr[-3000:], flush=True)
    if not report.is_file():
        raise SystemExit(f"check_device_timing: pytest wrote no report (exit {done.returncode})")
    results = json.loads(report.read_text())["sections"]["benchmarks"]["results"]
    return {result["record"]["name"].split("::")[-1]: result["record"] for result in results}


def figure(record: dict[str, Any]) -> str:
    """``70.1 us (launch overhead 9.2 us/call)``, with ``dispatch-bound`` when it was."""
    overhead = record.get("launch_overhead")
    text = f"{record['median'] * 1e6:.1f} us"
    if overhead is not None:
        text += f" (launch overhead {overhead * 1e6:.1f} us/call"
        bound = record.get("dispatch_bound")
        text += ", DISPATCH-BOUND: the device time is at most this)" if bound else ")"
    return text


def copy_verdict(reference: str, base: dict[str, Any], checked: str,
                 other: dict[str, Any]) -> tuple[str, bool]:
    """The copy line's verdict and whether it failed: the two copies' time per call
    within :data:`COPY_TOLERANCE` where both are device-bound; a dispatch-bound copy
    is a finding (its device time is at most its median), compared with nothing."""
    bound = [(name, record) for name, record in ((reference, base), (checked, other))
             if record.get("dispatch_bound")]
    if bound:
        text = "; ".join(
            f"FINDING: {name}'s copy is dispatch-bound ({record['launch_overhead'] * 1e6:.1f} "
            f"us of host dispatch per call against {record['median'] * 1e6:.1f} us per call): "
            f"the events timed the host, its device time is at most {record['median'] * 1e6:.1f}"
            " us" for name, record in bound)
        return text + "; not compared (no verdict: no event pair excludes that dispatch)", False
    text = verdict(other["median"] / base["median"], COPY_TOLERANCE)
    return text, text.startswith("FAIL")


def verdict(ratio: float, tolerance: float) -> str:
    if dry_run():
        return "dry run (CPU tier): no verdict"
    return ("PASS" if abs(ratio - 1) <= tolerance else "FAIL") + f" (within {tolerance:.0%})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="the same path on the CPU tier, without a verdict")
    args = parser.parse_args()
    if args.dry_run:
        os.environ["GPUCHECK_TIMING_DRY_RUN"] = "1"
    with tempfile.TemporaryDirectory(prefix="gpucheck-device-timing-") as work:
        records = run_fixture(Path(work))
    reference, checked = copy_backends()
    lines, failed = [], False
    wanted = [f"test_copy[{reference}]", f"test_copy[{checked}]",
              f"test_kernel[{kernel_backend()}]"]
    missing = [name for name in wanted if name not in records]
    if missing:
        print(f"check_device_timing: no record of {', '.join(missing)} (see pytest's output "
              "above: a backend that cannot run here is skipped)")
        return 2
    base, other = records[wanted[0]], records[wanted[1]]
    ratio = other["median"] / base["median"]
    text, copy_failed = copy_verdict(reference, base, checked, other)
    failed |= copy_failed
    lines.append(f"copy of {base['bytes']} B (read + written): {reference} {figure(base)}, "
                 f"{checked} {figure(other)}: {checked} / {reference} = {ratio:.3f}: {text}")
    kernel = records[wanted[2]]
    n = kernel_elements()
    gpu, cpu, how = reference_times(n)
    ratio = kernel["median"] / gpu
    text = verdict(ratio, KERNEL_TOLERANCE)
    if kernel.get("dispatch_bound") and not dry_run():
        # 2**27 elements take about 1 ms on an H200: dispatch-bound here is a finding of
        # the fixture's own, and the comparison still stands (both hold the dispatch).
        text += "; NOTE: the fixture named it dispatch-bound"
    failed |= text.startswith("FAIL")
    lines.append(f"{kernel_backend()} saxpy of {n} float32: gpu_benchmark median "
                 f"{figure(kernel)}, {how} {'' if dry_run() else 'GPU '}time "
                 f"{gpu * 1e6:.1f} us (its CPU time "
                 f"{cpu * 1e6:.1f} us per call): fixture / reference = {ratio:.3f}: {text}")
    print("\n".join(["", "== device timing", *lines]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
