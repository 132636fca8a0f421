"""Measure what loading pytest-gpucheck adds to a plain ``pytest --co``.

Runs ``python -m pytest --co -q`` on a generated project of plain tests,
alternating runs with the plugin and with ``-p no:gpucheck`` (so drift on a
noisy machine hits both alike), and prints the medians of their CPU time
(user + system, which neighbours on a shared machine disturb far less than
wall time) and the difference.

    python scripts/measure_plugin_overhead.py [--runs 30] [--tests 200]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _time_once(project: Path, extra: list[str]) -> float:
    """CPU seconds (user + system) of one run: steadier than wall time on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *extra],
        cwd=project,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tests", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        body = "".join(f"def test_{i}():\n    assert {i} == {i}\n\n" for i in range(args.tests))
        (project / "test_plain.py").write_text(body)
        with_plugin: list[float] = []
        without: list[float] = []
        _time_once(project, [])  # warm the file system cache and bytecode
        for _ in range(args.runs):
            with_plugin.append(_time_once(project, []))
            without.append(_time_once(project, ["-p", "no:gpucheck"]))
    med_with, med_without = statistics.median(with_plugin), statistics.median(without)
    spread = statistics.quantiles(without, n=4)
    print(f"runs: {args.runs} each, {args.tests} plain tests, pytest --co -q, CPU time")
    print(f"with plugin:    median {med_with * 1000:7.1f} ms")
    print(
        f"-p no:gpucheck: median {med_without * 1000:7.1f} ms "
        f"(interquartile {spread[0] * 1000:.1f}..{spread[2] * 1000:.1f} ms)"
    )
    print(
        f"difference:     {(med_with - med_without) * 1000:+7.1f} ms "
        f"({(med_with / med_without - 1) * 100:+.1f}%)"
    )


if __name__ == "__main__":
    main()
