"""Measure how often the conformance suites catch buggy kernels, and how often they
reject correct ones, over repeated runs per hypothesis profile.

The input is a folder of implementation pairs registered with
``pytest_gpucheck.implements``: every implementation whose name starts with
``broken`` is buggy (a run that does not fail it missed the bug), every other
one is correct (a run that fails it is a false alarm).  The registrations come
from the folder's ``conftest.py``, or with ``--plugin NAME`` from the module
``NAME`` in that folder, loaded with ``-p NAME`` (the simulator child loads a
``-p`` plugin too).  Each run is the user's command, in a fresh temporary
directory::

    pytest --gpu-conformance --gpu-impls=user --gpu-backends=B --hypothesis-profile=P

and each (implementation, backend) item counts once per run.  ``ci`` is
derandomized, so its runs repeat one another: its catch rate is what every CI
run catches.  The project's own proofs::

    python scripts/measure_catch_rate.py tests --plugin broken_implementations \\
        --backends numpy,numba-cpu --backends numba-cudasim --runs 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_once(folder: Path, plugin: str | None, backends: str, profile: str) -> dict[str, str]:
    """One run of the suites: test id -> passed / failed / error / skipped."""
    with tempfile.TemporaryDirectory(prefix="catch-rate-") as scratch:
        work = Path(scratch)
        env = {key: value for key, value in os.environ.items()
               if key not in ("CI", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
        args = ["--gpu-conformance", "--gpu-impls=user", f"--gpu-backends={backends}",
                f"--hypothesis-profile={profile}", "-p", "no:cacheprovider", "-q", "-n0",
                "-m", "gpu_kernel", f"--junitxml={work / 'junit.xml'}"]
        if plugin is None:
            # The user's own folder, with its conftest.py, is where pytest runs.
            cwd = folder
        else:
            cwd = work
            env["PYTHONPATH"] = os.pathsep.join(
                [str(folder), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            args = ["-p", plugin, "--rootdir", str(work), *args]
        subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       timeout=3600)
        junit = work / "junit.xml"
        if not junit.exists():
            raise SystemExit(f"the run with --gpu-backends={backends} --hypothesis-profile="
                             f"{profile} wrote no report; run it by hand to see why")
        outcomes = {}
        for case in ET.parse(junit).iter("testcase"):
            name = case.get("name", "")
            if case.find("failure") is not None:
                outcomes[name] = "failed"
            elif case.find("error") is not None:
                outcomes[name] = "error"
            elif case.find("skipped") is not None:
                outcomes[name] = "skipped"
            else:
                outcomes[name] = "passed"
        return outcomes


def is_buggy(test_id: str) -> bool:
    """``test_sum[numba-cudasim:broken_tree]`` -> True (the name after the colon)."""
    return test_id.rsplit(":", 1)[-1].startswith("broken")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder with the implementations")
    parser.add_argument("--plugin", help="module in FOLDER to load with -p instead of its "
                                         "conftest.py")
    parser.add_argument("--backends", action="append",
                        help="a --gpu-backends value, one run each (repeatable; default: "
                             "numpy,numba-cpu and numba-cudasim)")
    parser.add_argument("--profiles", default="gpucheck-dev,gpucheck-ci,gpucheck-thorough")
    parser.add_argument("--runs", type=int, default=5, help="runs per profile and backend set")
    args = parser.parse_args()
    folder = args.folder.resolve()
    backend_sets = args.backends or ["numpy,numba-cpu", "numba-cudasim"]

    print(f"catch rate of {folder} ({args.runs} runs per profile)")
    print(f"{'profile':<18} {'caught':>14} {'rate':>7} {'false alarms':>14} {'errors':>7} "
          f"{'seconds/run':>12}")
    for profile in args.profiles.split(","):
        caught = missed = alarms = correct = errors = 0
        misses: dict[str, int] = defaultdict(int)
        started = time.perf_counter()
        for _ in range(args.runs):
            for backends in backend_sets:
                for test_id, outcome in run_once(folder, args.plugin, backends, profile).items():
                    if outcome == "skipped":
                        continue
                    if outcome == "error":  # setup trouble: neither a catch nor a pass
                        errors += 1
                    elif is_buggy(test_id):
                        if outcome == "failed":
                            caught += 1
                        else:
                            missed += 1
                            misses[test_id] += 1
                    else:
                        correct += 1
                        alarms += outcome == "failed"
        per_run = (time.perf_counter() - started) / args.runs
        buggy = caught + missed
        rate = f"{100 * caught / buggy:.1f}%" if buggy else "-"
        print(f"{profile:<18} {f'{caught}/{buggy}':>14} {rate:>7} {f'{alarms}/{correct}':>14} "
              f"{errors:>7} {per_run:>12.1f}")
        for test_id, count in sorted(misses.items()):
            print(f"    missed {count}/{args.runs}: {test_id}")


if __name__ == "__main__":
    main()
