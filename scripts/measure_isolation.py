"""Measure what ``--gpu-isolate=backend`` costs against one process, and count the processes.

Runs the interop suite as a user does, from the checkout,

    python -m pytest conformance/test_interop.py --gpu-backends=cpu -q -p no:cacheprovider

once with ``--gpu-isolate=none`` and once with ``--gpu-isolate=backend`` (what a
GPU machine gets by default), alternated for ``--runs`` rounds so that drift on a
shared machine hits both alike.  It prints each mode's median wall time (and CPU
time, user + system of every process of the run, steadier under load), their
ratio against the target, the number of Python processes each run started
(counted by a ``sitecustomize`` put first on ``PYTHONPATH``: the pytest process,
the simulator child and every isolation worker), and each run's outcome line;
the two modes must give the same outcomes, else it exits 1.

    python scripts/measure_isolation.py [--runs 3] [--backends cpu] [--target FILE]
                                        [-- EXTRA PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The target the issue sets: isolation at most this many times the in-process run.
TARGET = 1.3
MODES = ("none", "backend")

#: Appends one line per Python process started under the run, then runs the
#: ``sitecustomize`` this one shadows (if any), so the run behaves as without it.
SITECUSTOMIZE = '''
import os, sys
_log = os.environ.get("GPUCHECK_MEASURE_PROCESSES")
if _log:
    with open(_log, "a", encoding="utf-8") as _f:
        _f.write(f"{os.getpid()} {' '.join(sys.argv)[:200]}\\n")
import importlib.machinery, importlib.util
_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
'''

OUTCOME = re.compile(r"^=*\s*(\d+ \w+(?:, \d+ \w+)*) in [\d.]+s", re.MULTILINE)


def run_once(mode: str, args: argparse.Namespace, hook: Path, log: Path) -> dict[str, object]:
    """One run of the suite in ``mode``: wall and CPU seconds, processes, outcome line."""
    log.write_text("")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    env["GPUCHECK_MEASURE_PROCESSES"] = str(log)
    # The run is a user's run, not a child of a pytest that may have started this script.
    for name in [k for k in env if k.startswith("PYTEST_")]:
        del env[name]
    command = [sys.executable, "-m", "pytest", args.target, f"--gpu-backends={args.backends}",
               f"--gpu-isolate={mode}", "-q", "-p", "no:cacheprovider", *args.pytest_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = OUTCOME.findall(result.stdout)
    outcome = found[-1] if found else f"no outcome line (exit {result.returncode})"
    processes = [line for line in log.read_text().splitlines() if line.strip()]
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "processes": len(processes),
        "pytest_processes": sum(" pytest" in line or "pytest " in line for line in processes),
        "outcome": outcome,
        "returncode": result.returncode,
        "command": " ".join(["python", *command[1:]]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds (each runs both modes)")
    parser.add_argument("--backends", default="cpu", help="--gpu-backends of the runs")
    parser.add_argument("--target", default="conformance/test_interop.py",
                        help="what pytest runs (from the checkout)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    results: dict[str, list[dict[str, object]]] = {mode: [] for mode in MODES}
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="measure-isolation-") as tmp:
        hook = Path(tmp, "hook")
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        log = Path(tmp, "processes.log")
        for round_ in range(args.runs):
            # Alternate which mode goes first, so a trend in the load favours neither.
            for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                result = run_once(mode, args, hook, log)
                results[mode].append(result)
                print(f"round {round_ + 1} {mode:8} wall {result['wall']:6.1f} s  "
                      f"cpu {result['cpu']:6.1f} s  processes {result['processes']:3}  "
                      f"{result['outcome']}", flush=True)
    load_end = os.getloadavg()
    print()
    print(f"command: {results['backend'][0]['command']} (and --gpu-isolate=none)")
    print(f"machine: {os.cpu_count()} CPUs; load average {load_start[0]:.1f} at start, "
          f"{load_end[0]:.1f} at end; {args.runs} run(s) per mode, alternated")
    medians = {}
    for mode in MODES:
        walls = [float(r["wall"]) for r in results[mode]]  # type: ignore[arg-type]
        cpus = [float(r["cpu"]) for r in results[mode]]  # type: ignore[arg-type]
        procs = sorted({int(r["processes"]) for r in results[mode]})  # type: ignore[call-overload]
        medians[mode] = (statistics.median(walls), statistics.median(cpus))
        print(f"{mode:8} wall median {medians[mode][0]:6.1f} s ({min(walls):.1f}..{max(walls):.1f})"
              f"  cpu median {medians[mode][1]:6.1f} s  python processes per run: "
              f"{', '.join(map(str, procs))}")
    wall_ratio = medians["backend"][0] / medians["none"][0]
    cpu_ratio = medians["backend"][1] / medians["none"][1]
    verdict = "within" if wall_ratio <= TARGET else "ABOVE"
    print(f"ratio backend/none: wall {wall_ratio:.2f}, cpu {cpu_ratio:.2f} "
          f"({verdict} the target {TARGET})")
    outcomes = {str(r["outcome"]) for mode in MODES for r in results[mode]}
    if len(outcomes) != 1:
        print(f"the modes' outcomes differ: {sorted(outcomes)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
