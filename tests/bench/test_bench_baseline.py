"""Baseline storage: round trip, bad files, other devices, missing folder, concurrent savers."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
from pathlib import Path

import pytest

from pytest_gpucheck.bench.baseline import BaselineError, BaselineStore, read_run
from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.reporting import atomic_files

H100 = Environment("NVIDIA H100 80GB HBM3", "9.0", "13.0", "13.0", "cupy", "13.6.0", "3.11.9")
A100 = dataclasses.replace(H100, device_model="NVIDIA A100-SXM4-40GB", compute_capability="8.0")


def record(name: str = "b.py::test_k[cupy]", level: float = 1e-3,
           environment: Environment = H100) -> BenchmarkRecord:
    return BenchmarkRecord(name=name, environment=environment, method="cuda-events",
                           samples=[level * (1 + i / 100) for i in range(12)], iterations=3,
                           warmup_rounds=2, first_call_seconds=0.2, l2_flushed=False,
                           bytes=1000, flops=10, ceiling_gbps=2000.0)


def saved_store(root: Path, *records: BenchmarkRecord) -> BaselineStore:
    store = BaselineStore(root)
    store.save(records, run_id="run", process="main")
    store.load_all()
    return store


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    original = record()
    store = saved_store(tmp_path, original)
    loaded = store.baseline(original.name, H100.device_model, "cupy")
    assert loaded is not None
    assert dataclasses.replace(loaded, saved_at="") == original
    assert loaded.saved_at
    (path,) = tmp_path.glob("*/*/*.json")
    assert path.parent == tmp_path / "NVIDIA-H100-80GB-HBM3" / "cupy"


def test_latest_run_is_the_baseline_and_older_ones_the_history(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    for level in (1e-3, 2e-3, 3e-3):
        store.save([record(level=level)], run_id="r", process="main")
    store.save([record(name="other")], run_id="r", process="main")
    store.load_all()
    latest = store.baseline("b.py::test_k[cupy]", H100.device_model, "cupy")
    assert latest is not None
    assert latest.samples[0] == pytest.approx(3e-3)
    history = store.history("b.py::test_k[cupy]", H100.device_model, "cupy")
    assert [r.samples[0] for r in history] == pytest.approx([1e-3, 2e-3, 3e-3])


def test_baseline_from_another_device_is_never_returned(tmp_path: Path) -> None:
    store = saved_store(tmp_path, record(environment=A100))
    assert store.baseline("b.py::test_k[cupy]", H100.device_model, "cupy") is None
    assert store.devices_with("b.py::test_k[cupy]", "cupy") == ["NVIDIA-A100-SXM4-40GB"]


def test_file_moved_to_another_device_folder_is_an_error(tmp_path: Path) -> None:
    saved_store(tmp_path, record(environment=A100))
    (path,) = tmp_path.glob("*/*/*.json")
    wrong = tmp_path / "NVIDIA-H100-80GB-HBM3" / "cupy"
    wrong.mkdir(parents=True)
    path.rename(wrong / path.name)
    with pytest.raises(BaselineError, match=r"recorded on 'NVIDIA A100-SXM4-40GB'.*stored under "
                                            r"NVIDIA-H100-80GB-HBM3/cupy.*move it back"):
        BaselineStore(tmp_path).load_all()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "wrong-schema",
                                    "bad-record"])
def test_damaged_file_is_a_one_line_error_and_is_left_untouched(tmp_path: Path,
                                                                damage: str) -> None:
    saved_store(tmp_path, record())
    (path,) = tmp_path.glob("*/*/*.json")
    text = path.read_text()
    damaged = {
        "truncate": text[: len(text) // 2],
        "garbage": "\x00\x01not json",
        "empty": "",
        "wrong-schema": json.dumps({"schema": "something-else"}),
        "bad-record": text.replace('"samples": [', '"samples": ["fast", '),
    }[damage]
    path.write_text(damaged)
    with pytest.raises(BaselineError) as raised:
        BaselineStore(tmp_path).load_all()
    message = str(raised.value)
    assert "\n" not in message
    assert str(path) in message
    assert "--gpu-bench-save" in message
    assert path.read_text() == damaged  # nothing overwritten


def test_missing_folder_is_an_error_for_comparing_and_created_for_saving(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "nowhere")
    with pytest.raises(BaselineError, match="does not exist; record a baseline first"):
        store.require_root("--gpu-bench-compare")
    store.load_all()  # nothing to load is not an error by itself
    (path,) = store.save([record()], run_id="r", process="main")
    assert path.is_file()


def test_failed_write_leaves_neither_a_partial_file_nor_a_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic_files.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        BaselineStore(tmp_path).save([record()], run_id="r", process="main")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_non_atomic_writer_would_leave_a_file_the_reader_rejects(tmp_path: Path) -> None:
    """What atomic writes prevent: a crash mid-write is a truncated file, never a baseline."""
    saved_store(tmp_path, record())
    (path,) = tmp_path.glob("*/*/*.json")
    payload = path.read_text()
    with open(path, "w") as handle:  # a plain writer, interrupted half-way
        handle.write(payload[: len(payload) // 3])
    with pytest.raises(BaselineError, match="corrupt or truncated"):
        read_run(path)


def _save_many(root: str, worker: str, count: int) -> None:
    store = BaselineStore(Path(root))
    for index in range(count):
        store.save([record(name=f"{worker}-{index}")], run_id="shared-run", process=worker)


def test_two_concurrent_savers_lose_nothing(tmp_path: Path) -> None:
    # Spawned, not forked: JAX, imported in this process by earlier tests, runs threads
    # that a fork would copy without their state (JAX warns: "will likely deadlock").
    context = multiprocessing.get_context("spawn")
    savers = [context.Process(target=_save_many, args=(str(tmp_path), f"gw{i}", 25))
              for i in range(2)]
    for saver in savers:
        saver.start()
    for saver in savers:
        saver.join(60)
        assert saver.exitcode == 0
    store = BaselineStore(tmp_path)
    store.load_all()
    names = {name for run in store.runs(H100.device_model, "cupy") for name in run.records}
    assert names == {f"gw{i}-{j}" for i in range(2) for j in range(25)}
    assert not list(tmp_path.rglob("*.tmp"))
