"""Size a real package's allocating slowdown: numbagg's ``move_mean`` (issue 43's client).

Issue 43 began on numbagg 0.9.6's ``move_mean`` (2^18 float64, numba-cpu), whose slow
branch moved the counting into a second pass over an allocated array: the gate of the
time read a 1.5-1.7x change as +150% to +370%.  This script writes two git checkouts
of a small user project in a temporary folder: ``base`` with ``move_mean`` vendored as
numbagg ships it (its ``ndmove`` wrapper left out: the kernel only), ``project`` with a
slow twin that counts the valid values in a first pass over a freshly allocated array
(one allocation of the input's size per call); with ``--identical``, ``project`` holds
numbagg's kernel too (an A/A run on a real kernel: the true ratio is 1).  Then:

* the true ratio slow / fast, in one process with one numba thread and the allocator
  in the state the gate's processes start in (``measure_accuracy.true_ratio``:
  interleaved blocks A B B A for ``--seconds``), before and after the gate runs;
* ``--runs`` gate runs, ``python -m pytest --gpu-bench-against=../base`` in
  ``project`` as the docs print it, each reported change held against the true ratios:
  within +-20% where ``|(1 + change) / true - 1| <= 0.20`` for the true ratio measured
  before and the one after.

Usage::

    python scripts/measure_real_client.py [--runs 3] [--seconds 20] [--outputs FOLDER]
        [--identical] [--pytest-args ARG ...]

Exit status 0 when every run's change is within +-20% of both true ratios, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_accuracy as accuracy

#: numbagg 0.9.6 ``numbagg/moving.py`` ``move_mean``, vendored.
FAST = '''\
import numpy as np
from numba import njit


@njit
def move_mean(a, window, min_count, out):
    asum = 0.0
    count = 0
    min_count = max(min_count, 1)
    for i in range(window):
        ai = a[i]
        if not np.isnan(ai):
            asum += ai
            count += 1
        out[i] = asum / count if count >= min_count else np.nan
    for i in range(window, len(a)):
        ai = a[i]
        aold = a[i - window]
        ai_valid = not np.isnan(ai)
        aold_valid = not np.isnan(aold)
        if aold_valid:
            asum -= aold
            count -= 1
        if ai_valid:
            asum += ai
            count += 1
        out[i] = asum / count if count >= min_count else np.nan
    return out
'''

#: The slow twin: the valid values counted in a first pass into a fresh array.
SLOW = '''\
import numpy as np
from numba import njit


@njit
def move_mean(a, window, min_count, out):
    n = len(a)
    valid = np.empty(n, np.float64)  # a fresh array of the input's size, every call
    for i in range(n):
        valid[i] = 0.0 if np.isnan(a[i]) else 1.0
    asum = 0.0
    count = 0.0
    min_count = max(min_count, 1)
    for i in range(window):
        if valid[i]:
            asum += a[i]
        count += valid[i]
        out[i] = asum / count if count >= min_count else np.nan
    for i in range(window, n):
        if valid[i - window]:
            asum -= a[i - window]
        count -= valid[i - window]
        if valid[i]:
            asum += a[i]
        count += valid[i]
        out[i] = asum / count if count >= min_count else np.nan
    return out
'''

#: Elements of the input (2 MiB of float64, the issue's size), the window, every 97th
#: value NaN.
SIZE, WINDOW, NAN_EVERY = 1 << 18, 20, 97

TEST = f'''\
import numpy as np

import kernels


def test_move_mean(gpu_backend, gpu_benchmark):
    a = np.random.default_rng(0).random({SIZE})
    a[::{NAN_EVERY}] = np.nan
    x = gpu_backend.to_device(a)
    out = gpu_backend.empty(({SIZE},), np.float64)
    gpu_benchmark(kernels.move_mean, x, {WINDOW}, 1, out)
'''

INI = "[pytest]\ngpu_backends = numba-cpu\naddopts = -p no:hypothesispytest -p no:cacheprovider\n"


def write_checkouts(root: Path, identical: bool = False) -> tuple[Path, Path]:
    """``root/base`` (the fast kernel) and ``root/project`` (the slow twin, or with
    ``identical`` the same fast kernel), each a git repository with one commit."""
    folders = []
    for name, source in (("base", FAST), ("project", FAST if identical else SLOW)):
        folder = root / name
        folder.mkdir()
        (folder / "kernels.py").write_text(source)
        (folder / "test_move.py").write_text(TEST)
        (folder / "pytest.ini").write_text(INI)
        for command in (["init", "-q"], ["add", "."],
                        ["-c", "user.name=gpucheck", "-c", "user.email=gpucheck@localhost",
                         "commit", "-qm", name]):
            subprocess.run(["git", *command], cwd=folder, check=True)
        folders.append(folder)
    return folders[0], folders[1]


def true_child(root: Path, seconds: float) -> None:
    """In the child process: the true ratio, one JSON line."""
    import numpy as np

    from pytest_gpucheck.bench.placement import steady_allocator

    steady_allocator()
    fast = accuracy.load(root / "base" / "kernels.py", "kernels_fast")
    slow = accuracy.load(root / "project" / "kernels.py", "kernels_slow")
    a = np.random.default_rng(0).random(SIZE)
    a[::NAN_EVERY] = np.nan
    outs = np.empty(SIZE), np.empty(SIZE)
    np.testing.assert_allclose(slow.move_mean(a, WINDOW, 1, outs[1]),
                               fast.move_mean(a, WINDOW, 1, outs[0]), rtol=1e-9)
    result = accuracy.true_ratio(lambda: fast.move_mean(a, WINDOW, 1, outs[0]),
                                 lambda: slow.move_mean(a, WINDOW, 1, outs[1]), seconds)
    print(json.dumps(result.__dict__), flush=True)


def measure_true(root: Path, seconds: float) -> accuracy.TrueRatio:
    """The true ratio in a child process with the gate's thread limits."""
    run = subprocess.run([sys.executable, __file__, "true-child", "--root", str(root),
                          "--seconds", str(seconds)], capture_output=True, text=True,
                         env={**os.environ, **accuracy.THREADS_ENV})
    if run.returncode:
        raise SystemExit(f"the true-ratio process exited {run.returncode}:\n"
                         f"{run.stderr[-3000:]}")
    return accuracy.TrueRatio(**json.loads(run.stdout.splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="measure", choices=("measure", "true-child"))
    parser.add_argument("--runs", type=int, default=3, help="gate runs")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="seconds of interleaved timeit for each true ratio")
    parser.add_argument("--outputs", type=Path, default=None,
                        help="a folder to keep each gate run's pytest output and JSON report in")
    parser.add_argument("--identical", action="store_true",
                        help="the project holds numbagg's kernel too: an A/A run")
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                        help="the rest of the line goes to each gate run's pytest "
                             "(--gpu-bench-pin=off: the two sides on CPUs of their own)")
    args = parser.parse_args(argv)
    if args.what == "true-child":
        true_child(args.root, args.seconds)
        return 0
    with tempfile.TemporaryDirectory(prefix="gpucheck-real-client-") as tmp:
        root = Path(tmp)
        _, project = write_checkouts(root, args.identical)
        truths = [measure_true(root, args.seconds)]
        print(f"true ratio before: {truths[0].median:.3f} [{truths[0].low:.3f}, "
              f"{truths[0].high:.3f}], faults per call {truths[0].fast_faults:.0f} / "
              f"{truths[0].slow_faults:.0f}; {accuracy.load_text()}", flush=True)
        changes = []
        for run in range(args.runs):
            results, output, wall = accuracy.run_gate(project, root / "report.json", args,
                                                      f"real-client-{run}")
            verdict = (results[0].get("verdict") or {}) if results else {}
            if verdict.get("change") is None:
                print(f"gate run {run}: no change reported ({wall:.0f} s):\n{output[-2000:]}")
                return 1
            changes.append(float(verdict["change"]))
            print(f"gate run {run}: {str(verdict.get('status')).upper()} change "
                  f"{changes[-1]:+.1%}, {wall:.0f} s; {accuracy.load_text()}", flush=True)
        truths.append(measure_true(root, args.seconds))
        print(f"true ratio after: {truths[1].median:.3f} [{truths[1].low:.3f}, "
              f"{truths[1].high:.3f}]", flush=True)
    within = all(abs((1 + change) / truth.median - 1) <= accuracy.TOLERANCE
                 for change in changes for truth in truths)
    print(f"gate's ratio over the true ratio: "
          f"{', '.join(f'{(1 + c) / truths[0].median:.3f}' for c in changes)} (before), "
          f"{', '.join(f'{(1 + c) / truths[1].median:.3f}' for c in changes)} (after): "
          f"{'every run within' if within else 'NOT every run within'} +-20%")
    return 0 if within else 1


if __name__ == "__main__":
    raise SystemExit(main())
