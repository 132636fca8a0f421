"""``python -m pytest_gpucheck.bench.history``: merge, prune, show and plot baselines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from user_runs import REPO, run_command

from pytest_gpucheck.bench.baseline import BaselineStore
from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.records import BenchmarkRecord

H100 = Environment("NVIDIA H100 80GB HBM3", "9.0", "13.0", "13.0", "cupy", "13.6.0", "3.11.9")
A100 = Environment("NVIDIA A100-SXM4-40GB", "8.0", "13.0", "13.0", "cupy", "13.6.0", "3.11.9")


def _record(level: float, environment: Environment = H100, gate: str = "") -> BenchmarkRecord:
    return BenchmarkRecord(name="b.py::test_k[cupy]", environment=environment,
                           method="cuda-events", samples=[level] * 12, iterations=1,
                           warmup_rounds=2, first_call_seconds=level, l2_flushed=False,
                           extra={"gate": gate} if gate else {})


def _history(*args: str) -> subprocess.CompletedProcess[str]:
    return run_command([sys.executable, "-m", "pytest_gpucheck.bench.history", *args], REPO,
                       timeout=120)


def test_merge_prune_show_and_plot(tmp_path: Path) -> None:
    main, other = BaselineStore(tmp_path / "main"), BaselineStore(tmp_path / "other")
    for index, level in enumerate((1.0e-3, 1.01e-3, 1.2e-3)):
        main.save([_record(level, gate="regression" if level > 1.1e-3 else "unchanged")],
                  f"run{index}", "main")
    other.save([_record(2e-3, A100)], "elsewhere", "main")
    plot = tmp_path / "history.html"
    result = _history(str(main.root), "--merge", str(other.root), "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "merged 1 run file(s) from " + str(other.root)
    assert "NVIDIA-A100-SXM4-40GB / cupy: 1 run(s)" in lines
    assert "NVIDIA-H100-80GB-HBM3 / cupy: 3 run(s)" in lines
    assert "  b.py::test_k[cupy]: 1 ms -> 1.01 ms -> 1.2 ms REGRESSION" in lines
    page = plot.read_text()
    assert page.count("<section>") == 2
    assert "fill='#c0392b'" in page  # the regression, in red

    pruned = _history(str(main.root), "--prune-keep=1")
    assert pruned.returncode == 0, pruned.stderr
    assert ("pruned 2 run file(s), keeping the newest 1 per device model and backend"
            in pruned.stdout)
    assert "  b.py::test_k[cupy]: 1.2 ms REGRESSION" in pruned.stdout.splitlines()
    assert len(list(main.root.glob("*/*/*.json"))) == 2


def test_bad_input_is_one_line_and_copies_nothing(tmp_path: Path) -> None:
    main, other = BaselineStore(tmp_path / "main"), BaselineStore(tmp_path / "other")
    main.save([_record(1e-3)], "run", "main")
    (saved,) = other.save([_record(1e-3, A100)], "run", "main")
    # A run moved into another device model's folder (a cache restored on the wrong runner).
    wrong = other.root / "NVIDIA-H100-80GB-HBM3" / "cupy" / saved.name
    wrong.parent.mkdir(parents=True)
    saved.rename(wrong)
    result = _history(str(main.root), "--merge", str(other.root))
    assert result.returncode == 4
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"ERROR: baseline file {wrong} was recorded on 'NVIDIA A100-SXM4-40GB'")
    assert len(list(main.root.glob("*/*/*.json"))) == 1

    (main.root / "NVIDIA-H100-80GB-HBM3" / "cupy" / "broken.json").write_text("{")
    result = _history(str(main.root), "--prune-keep=1")
    assert result.returncode == 4
    assert "is corrupt or truncated" in result.stderr
    assert len(list(main.root.glob("*/*/*.json"))) == 2  # nothing pruned
