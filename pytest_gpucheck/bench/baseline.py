"""Baseline storage: one folder per (device model, backend), one file per saved run.

Layout::

    BASELINE_DIR/<device-model>/<backend>/<UTC time>-<run id>-<process>.json

Every save writes a new file (temporary file in the same folder, then
``os.replace``), so two pytest-xdist workers saving at once each add their own
file and nothing is overwritten or lost; a reader never sees a half-written
file.  The baseline of a benchmark is its record in the most recent run that
contains it; older runs are its history.

A file that cannot be read is an error naming the file and the fix, never a
silently ignored baseline: a gate that quietly compares with nothing passes
everything.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_gpucheck.bench.environment import slugify
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.reporting.atomic_files import write_text_atomically

#: Version 2: a record measured by ``--gpu-bench-save`` holds one summary per fresh
#: process (``extra["process_summaries"]``, bench/stored.py); version 1 held one process.
SCHEMA = "pytest-gpucheck-benchmarks/2"
OLD_SCHEMAS = ("pytest-gpucheck-benchmarks/1",)
RUN_SUFFIX = ".json"


class BaselineError(Exception):
    """A baseline store problem, with a one-line message that says how to fix it."""


@dataclass
class StoredRun:
    """One saved run of one backend on one device model."""

    path: Path
    saved_at: str
    run_id: str
    records: dict[str, BenchmarkRecord]


@dataclass
class BaselineStore:
    """The baselines under ``root`` (which may not exist yet when only saving)."""

    root: Path
    _runs: dict[tuple[str, str], list[StoredRun]] = field(default_factory=dict)

    def folder(self, device_model: str, backend: str) -> Path:
        return self.root / slugify(device_model) / slugify(backend)

    # -- reading -----------------------------------------------------------------
    def require_root(self, option: str) -> None:
        """Raise unless the storage folder exists (comparing needs something to compare with)."""
        if not self.root.is_dir():
            raise BaselineError(
                f"baseline folder {self.root} does not exist; record a baseline first by adding "
                f"--gpu-bench-save to this command, or point --gpu-bench-baseline at the right "
                "folder"
            )

    def check_folder(self) -> None:
        """Raise if ``root`` exists but is not a folder (a file where the baselines go)."""
        if self.root.exists() and not self.root.is_dir():
            raise BaselineError(
                f"--gpu-bench-baseline={self.root} is a file, not a folder; point it at a "
                "folder (it is created on the first --gpu-bench-save)"
            )

    def load_all(self) -> None:
        """Read and validate every stored run (errors name the bad file)."""
        self._runs.clear()
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob(f"*/*/*{RUN_SUFFIX}")):
            run = read_run(path)
            key = (path.parent.parent.name, path.parent.name)
            self._runs.setdefault(key, []).append(run)
        for runs in self._runs.values():
            runs.sort(key=lambda run: (run.saved_at, run.path.name))

    def all_runs(self) -> dict[tuple[str, str], list[StoredRun]]:
        """Every loaded run by (device folder, backend folder), oldest first."""
        return dict(self._runs)

    def runs(self, device_model: str, backend: str) -> list[StoredRun]:
        """Stored runs for this device model and backend, oldest first."""
        return self._runs.get((slugify(device_model), slugify(backend)), [])

    def baseline(self, name: str, device_model: str, backend: str) -> BenchmarkRecord | None:
        """The most recently saved record of benchmark ``name`` here, or None."""
        for run in reversed(self.runs(device_model, backend)):
            if name in run.records:
                return run.records[name]
        return None

    def history(self, name: str, device_model: str, backend: str) -> list[BenchmarkRecord]:
        """Every saved record of benchmark ``name`` here, oldest first."""
        return [
            run.records[name] for run in self.runs(device_model, backend) if name in run.records
        ]

    def devices_with(self, name: str, backend: str) -> list[str]:
        """Device folders that hold a baseline of ``name`` on ``backend`` (for messages)."""
        return sorted(
            device
            for (device, stored_backend), runs in self._runs.items()
            if stored_backend == slugify(backend) and any(name in run.records for run in runs)
        )

    # -- writing -----------------------------------------------------------------
    def save(self, records: Iterable[BenchmarkRecord], run_id: str, process: str) -> list[Path]:
        """Write ``records`` as new run files, one per (device model, backend); return them."""
        groups: dict[tuple[str, str], list[BenchmarkRecord]] = {}
        for record in records:
            key = (record.environment.device_model, record.backend)
            groups.setdefault(key, []).append(record)
        saved_at = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        written = []
        for (device_model, backend), group in groups.items():
            folder = self.folder(device_model, backend)
            folder.mkdir(parents=True, exist_ok=True)
            # The random part keeps two savers in the same microsecond apart.
            name = f"{saved_at}-{slugify(run_id)[:16]}-{slugify(process)}-{uuid.uuid4().hex[:8]}"
            payload = {
                "schema": SCHEMA,
                "saved_at": saved_at,
                "run_id": run_id,
                "device_model": device_model,
                "backend": backend,
                "benchmarks": [dict(record.as_dict(), saved_at=saved_at) for record in group],
            }
            path = folder / f"{name}{RUN_SUFFIX}"
            write_json_atomically(path, payload)
            written.append(path)
        return written


def write_json_atomically(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` so that readers see the old state or the whole new file."""
    write_text_atomically(path, json.dumps(payload, indent=1, sort_keys=True))


def read_run(path: Path) -> StoredRun:
    """Parse and validate one run file; raise :class:`BaselineError` naming it."""
    fix = "delete it (or restore it from version control) and record again with --gpu-bench-save"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"baseline file {path} is corrupt or truncated ({exc.msg} at line {exc.lineno}); {fix}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc}); {fix}") from None
    if isinstance(data, dict) and data.get("schema") in OLD_SCHEMAS:
        raise BaselineError(
            f"baseline file {path} was saved by an older pytest-gpucheck (schema "
            f"{data['schema']!r}: one process per benchmark, which the stored gate no longer "
            "compares); delete it and re-save the baseline with --gpu-bench-save")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BaselineError(f"baseline file {path} is not a pytest-gpucheck benchmark run "
                            f"(schema {SCHEMA!r} expected); {fix}")
    device_folder, backend_folder = path.parent.parent.name, path.parent.name
    if slugify(str(data.get("device_model"))) != device_folder or slugify(
        str(data.get("backend"))
    ) != backend_folder:
        raise BaselineError(
            f"baseline file {path} was recorded on {data.get('device_model')!r} with "
            f"{data.get('backend')!r} but is stored under {device_folder}/{backend_folder}; "
            "baselines only compare on the same device model and backend: move it back"
        )
    records = {}
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise BaselineError(f"baseline file {path}: field 'benchmarks' must be a list of "
                            f"records, got {type(benchmarks).__name__}; {fix}")
    for index, item in enumerate(benchmarks):
        where = f"baseline file {path}, record {index}"
        if not isinstance(item, dict):
            raise BaselineError(f"{where} must be an object, got {type(item).__name__}; {fix}")
        try:
            record = BenchmarkRecord.from_dict(item)
        except KeyError as exc:
            raise BaselineError(f"{where} lacks the field {exc.args[0]!r}; {fix}") from None
        except (TypeError, ValueError) as exc:
            raise BaselineError(f"{where} ({item.get('name', '?')!r}) has a field of the wrong "
                                f"type or value: {_field_problem(item, exc)}; {fix}") from None
        if (record.environment.device_model, record.backend) != (
            data["device_model"], data["backend"]
        ):
            raise BaselineError(f"{where} ({record.name!r}) is from another device or backend "
                                f"than the file ({data['device_model']!r}, {data['backend']!r});"
                                f" {fix}")
        records[record.name] = record
    return StoredRun(path, str(data["saved_at"]), str(data.get("run_id", "")), records)


#: Fields of a stored record and what each must hold (for error messages).
_EXPECTED = {
    "samples": "a non-empty list of finite seconds >= 0",
    "name": "a string",
    "environment": "an object",
    "method": "a string",
    "iterations": "an integer",
    "l2_flushed": "true or false",
    "warmup_rounds": "an integer",
    "first_call_seconds": "a number",
    "bytes": "an integer or null",
    "flops": "an integer or null",
    "ceiling_gbps": "a number or null",
    # Added later, optional: files without them still load (the paired copy's size is
    # then read from "reference"), and readers that predate them ignore them.
    "ceiling_bytes": "an integer or null",
    "session_ceiling": "null or an object: gbps, bytes, copies, worst_gbps, best_from, "
                       "worst_from, same_backend_spread (optional)",
    "dispatch_samples": "a list of seconds (host dispatch per call, per round; optional)",
}


def _field_problem(item: dict[str, Any], exc: Exception) -> str:
    """Name the first field whose value cannot be what a record needs."""
    checks: dict[str, Any] = {
        "samples": lambda v: isinstance(v, list) and v and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 and x == x
            and x != float("inf") for x in v),
        "name": lambda v: isinstance(v, str),
        "environment": lambda v: isinstance(v, dict),
        "method": lambda v: isinstance(v, str),
        "iterations": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "l2_flushed": lambda v: isinstance(v, bool),
    }
    for name, ok in checks.items():
        if name in item and not ok(item[name]):
            return f"field {name!r} should be {_EXPECTED[name]}, got {item[name]!r:.60}"
    return f"{exc}"
