"""The process model of each GPU tier step, read from the step's own command line.

``scripts/run_gpu_tier.sh`` runs every step's exact command once before the tier, with
``PYTEST_PLUGINS=gpu_tier_model`` and ``GPU_TIER_MODEL_PROBE=<folder>``: each pytest the
command starts (both ranks under ``mpiexec``, the pytest a script starts) loads this
module as a plugin, writes down how it was configured (after the project's pyproject
addopts, pytest-xdist and pytest-benchmark have had their say) and ends before its
first test, starting no worker.  Then ``python scripts/gpu_tier_model.py check FOLDER
STEP=MODEL...`` judges each step against the model the script declares for it and
prints one line per step; exit status 1 if a step would run otherwise:

* ``one-process``: every pytest of the step runs its items itself (``-n 0``: no
  pytest-xdist worker per core; its isolation workers are its own children);
* ``benchmark-json``: one process, and pytest-benchmark on with ``--benchmark-json``
  (pytest-benchmark switches itself off under ``--dist``: a 0-byte JSON);
* ``mpiexec-2``: two ranks under the launcher, neither refused
  (``pytest_gpucheck.mpi.rank_session.launcher_refusal``, the ranks' own check);
* ``no-pytest``: a script that measures in its own process and starts no pytest (the
  probe step); not run by the check (it would measure), only named.

``python scripts/gpu_tier_model.py json FILE``, after the benchmarks, fails their step
when pytest-benchmark's JSON holds no benchmark.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE_VARIABLE = "GPU_TIER_MODEL_PROBE"
MODELS = ("one-process", "benchmark-json", "mpiexec-2", "no-pytest")


def facts(config: pytest.Config) -> dict[str, Any]:
    """How this pytest is configured to run its items."""
    from pytest_gpucheck.environment import launched_rank
    from pytest_gpucheck.mpi.rank_session import launcher_refusal

    bench = getattr(config, "_benchmarksession", None)
    return {
        "pid": os.getpid(),
        "args": list(config.invocation_params.args),
        "numprocesses": config.getoption("numprocesses", None),
        "dist": config.getoption("dist", None),
        "xdist_worker": os.environ.get("PYTEST_XDIST_WORKER"),
        "launched_rank": launched_rank() is not None,
        "launcher_refusal": launcher_refusal(config),
        "benchmark_disabled": None if bench is None else bool(bench.disabled),
        "benchmark_json": bool(config.getoption("benchmark_json", None)),
    }


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Write this process's facts and end the session (before pytest-xdist's workers,
    which start at session start, trylast)."""
    folder = os.environ.get(PROBE_VARIABLE)
    if not folder:
        return
    path = Path(folder) / f"{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(facts(session.config)))
    temporary.replace(path)
    pytest.exit("gpu_tier_model: process model written", returncode=0)


def _one_process(entry: dict[str, Any]) -> str | None:
    """Why ``entry``'s pytest would not run its items itself, or None."""
    if entry["xdist_worker"]:
        return f"it is pytest-xdist worker {entry['xdist_worker']}"
    if entry["numprocesses"] or entry["dist"] not in (None, "no"):
        return (f"pytest-xdist would start {entry['numprocesses']} worker(s) "
                f"(--dist {entry['dist']}); add -n 0")
    return None


def judge(model: str, entries: list[dict[str, Any]]) -> tuple[str, str | None]:
    """(what the step's processes are, why that is not ``model`` or None)."""
    if model == "no-pytest":
        return ("starts no pytest (not run by this check)",
                f"it started {len(entries)} pytest process(es)" if entries else None)
    if not entries:
        return "no pytest reported", "no pytest of the step reached its session"
    what = f"{len(entries)} pytest process(es), " + ", ".join(
        f"-n {entry['numprocesses'] if entry['numprocesses'] is not None else '(none)'} "
        f"--dist {entry['dist'] or '(none)'}" for entry in entries[:2])
    problems = [problem for entry in entries if (problem := _one_process(entry))]
    if model == "benchmark-json":
        for entry in entries:
            if entry["benchmark_json"] and entry["benchmark_disabled"] is not False:
                problems.append("pytest-benchmark is off (it turns itself off under "
                                "--dist): its --benchmark-json would be empty")
        if not any(entry["benchmark_json"] for entry in entries):
            problems.append("no --benchmark-json asked")
        what += "; pytest-benchmark on, JSON asked" if not problems else ""
    elif model == "mpiexec-2":
        ranks = [entry for entry in entries if entry["launched_rank"]]
        if len(ranks) != 2:
            problems.append(f"{len(ranks)} rank(s) under the launcher, not 2")
        problems += [f"a rank would refuse: {entry['launcher_refusal']}"
                     for entry in ranks if entry["launcher_refusal"]]
        what += "; 2 ranks under the launcher" if len(ranks) == 2 else ""
    elif model != "one-process":
        problems.append(f"unknown model {model!r} (one of {', '.join(MODELS)})")
    return what, ("; ".join(dict.fromkeys(problems)) or None)


def check(folder: Path, steps: list[str]) -> int:
    """Print one line per ``STEP=MODEL`` from the facts under ``folder/STEP``; 1 if any
    step would not run as its model says."""
    failed = False
    for step_model in steps:
        step, _, model = step_model.partition("=")
        entries = [json.loads(path.read_text())
                   for path in sorted((folder / step).glob("*.json"))]
        what, problem = judge(model, entries)
        if problem and not entries:
            exit_file = folder / f"{step}.exit"
            log = folder / f"{step}.log"
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] \
                if log.is_file() else []
            problem += (f" (exit {exit_file.read_text().strip() if exit_file.is_file() else '?'}"
                        f"{': ' + tail[0] if tail else ''})")
        failed |= problem is not None
        print(f"{step}: {model}: " + (f"WRONG: {problem} [{what}]" if problem else f"ok [{what}]"))
    return 1 if failed else 0


def benchmark_json(path: Path) -> int:
    """After the benchmarks: 0 if pytest-benchmark's JSON at ``path`` holds what they
    timed; else 1, with one line (a 0-byte file when pytest-benchmark turned itself
    off under --dist; missing when the step wrote it elsewhere)."""
    try:
        benchmarks = json.loads(path.read_text()).get("benchmarks")
    except (OSError, ValueError, AttributeError) as exc:
        problem = f"unreadable ({type(exc).__name__}: {exc})"
    else:
        if benchmarks:
            print(f"{path.name}: {len(benchmarks)} benchmark(s)")
            return 0
        problem = "holds no benchmark"
    print(f"{path.name} {problem}: the benchmarks' step failed (pytest-benchmark off?)")
    return 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "json":
        return benchmark_json(Path(argv[1]))
    if len(argv) < 2 or argv[0] != "check":
        print("usage: gpu_tier_model.py check FOLDER STEP=MODEL... | json FILE",
              file=sys.stderr)
        return 2
    return check(Path(argv[1]), argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
