"""One benchmark's measurement: samples, derived figures and where it ran."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pytest_gpucheck.bench.environment import Environment, environment_from_dict

#: Dispatch per call over time per call from which a GPU record is dispatch-bound.
#: Calls queue ahead of the device only while each one's device time exceeds its
#: dispatch; when they do not, the events time the host, and the median reads about
#: the dispatch.  Below 0.8 the device was clearly the slower side.
DISPATCH_BOUND = 0.8


@dataclass(frozen=True)
class SessionCeiling:
    """The best copy of ``bytes`` (read + written) on one device in one session."""

    #: The fastest copy's GB/s: the ceiling the fractions use.
    gbps: float
    #: Bytes one copy moved (read + written): the size, and so the cache regime.
    bytes: int
    #: How many copy measurements of this size on this device the session made.
    copies: int
    #: The slowest of them, GB/s: ``gbps / worst_gbps`` is their spread.
    worst_gbps: float
    #: The benchmark (and backend) whose copy was the fastest.
    best_from: str
    worst_from: str
    #: The widest best/slowest ratio among the copies of any one backend: copies of one
    #: framework that disagree saw contention; frameworks whose copies differ do not
    #: (on an idle H200 numba-cuda's copy ran at 1.1 TB/s beside CuPy's 3.8 TB/s).
    same_backend_spread: float = 1.0

    @property
    def spread(self) -> float:
        """Best over slowest copy (1.0 when they agree, or with one copy)."""
        return self.gbps / self.worst_gbps if self.worst_gbps > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "spread": self.spread}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionCeiling:
        """Rebuild one (raises ``KeyError``/``TypeError``/``ValueError`` on bad data)."""
        return cls(gbps=float(data["gbps"]), bytes=int(data["bytes"]),
                   copies=int(data["copies"]), worst_gbps=float(data["worst_gbps"]),
                   best_from=str(data.get("best_from", "")),
                   worst_from=str(data.get("worst_from", "")),
                   same_backend_spread=float(data.get("same_backend_spread", 1.0)))


@dataclass
class BenchmarkRecord:
    """The per-round samples of one benchmark on one backend, with its context.

    ``samples`` are seconds per call, one per timed round (a round runs the
    callable ``iterations`` times).  ``bytes`` and ``flops`` are what the
    benchmark declared per call; the derived rates use the median sample.
    """

    name: str
    environment: Environment
    method: str
    samples: list[float]
    iterations: int
    warmup_rounds: int
    first_call_seconds: float
    l2_flushed: bool
    bytes: int | None = None
    flops: int | None = None
    #: GB/s of this benchmark's own copy: the fastest round of the copy timed beside
    #: it (or of the process's larger copy, with the L2 flush).
    ceiling_gbps: float | None = None
    saved_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Per-round seconds per call of the calibration workload timed beside each
    #: round (``reference``, e.g. ``copy of 12582912 B``); empty without one.
    reference_samples: list[float] = field(default_factory=list)
    reference: str = ""
    #: Bytes (read + written) that the copy behind ``ceiling_gbps`` moved: its size,
    #: and so its cache regime.
    ceiling_bytes: int | None = None
    #: The best copy of ``ceiling_bytes`` on this device in the whole session, with its
    #: provenance (set at session end, :mod:`.session_ceiling`); ``None`` before.
    session_ceiling: SessionCeiling | None = None
    #: Host seconds per call that each round's first calls took to return: their
    #: dispatch (the launch overhead), measured on GPU backends; empty elsewhere.
    dispatch_samples: list[float] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return self.environment.backend

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def ratios(self) -> list[float]:
        """Each round's time over its reference's time (empty without a reference)."""
        if len(self.reference_samples) != len(self.samples):
            return []
        return [s / r for s, r in zip(self.samples, self.reference_samples, strict=True)
                if r > 0]

    @property
    def launch_overhead(self) -> float | None:
        """Median host dispatch per call, seconds (``None`` where it is not measured)."""
        return float(np.median(self.dispatch_samples)) if self.dispatch_samples else None

    @property
    def dispatch_bound(self) -> bool:
        """The device waited on the host: dispatch per call is at least
        :data:`DISPATCH_BOUND` of the time per call, so the calls could not queue
        ahead of the device and the median is the host's dispatch rate, an upper
        bound of the device time, not the device time."""
        overhead = self.launch_overhead
        return overhead is not None and overhead >= DISPATCH_BOUND * self.median

    @property
    def compile_seconds(self) -> float:
        """JIT and first-touch cost: the first call minus a steady-state call."""
        return max(self.first_call_seconds - self.median, 0.0)

    @property
    def gbps(self) -> float | None:
        """Declared bytes per second at the median, in GB/s (10^9)."""
        return _rate(self.bytes, self.median)

    @property
    def gflops(self) -> float | None:
        """Declared flops per second at the median, in GFLOP/s."""
        return _rate(self.flops, self.median)

    @property
    def ceiling(self) -> float | None:
        """The copy ceiling the fraction uses, GB/s: the session's best copy of these
        bytes on this device when known, else this benchmark's own copy."""
        if self.session_ceiling is not None:
            return self.session_ceiling.gbps
        return self.ceiling_gbps

    @property
    def fraction_of_ceiling(self) -> float | None:
        """GB/s as a fraction of the device's measured copy bandwidth (:attr:`ceiling`)."""
        ceiling = self.ceiling
        if self.gbps is None or not ceiling:
            return None
        return self.gbps / ceiling

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (derived figures included for people reading the file)."""
        return {
            "name": self.name,
            "environment": self.environment.as_dict(),
            "method": self.method,
            "samples": list(self.samples),
            "iterations": self.iterations,
            "warmup_rounds": self.warmup_rounds,
            "first_call_seconds": self.first_call_seconds,
            "compile_seconds": self.compile_seconds,
            "l2_flushed": self.l2_flushed,
            "bytes": self.bytes,
            "flops": self.flops,
            "ceiling_gbps": self.ceiling_gbps,
            "ceiling_bytes": self.ceiling_bytes,
            "session_ceiling": (self.session_ceiling.as_dict()
                                if self.session_ceiling is not None else None),
            "median": self.median,
            "gbps": self.gbps,
            "gflops": self.gflops,
            "fraction_of_ceiling": self.fraction_of_ceiling,
            "saved_at": self.saved_at,
            "extra": self.extra,
            "reference": self.reference,
            "reference_samples": list(self.reference_samples),
            "dispatch_samples": list(self.dispatch_samples),
            "launch_overhead": self.launch_overhead,
            "dispatch_bound": self.dispatch_bound,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkRecord:
        """Rebuild a record; raises ``ValueError``/``KeyError``/``TypeError`` on bad data."""
        samples = [float(value) for value in data["samples"]]
        if not samples or not all(math.isfinite(value) and value >= 0 for value in samples):
            raise ValueError(f"benchmark {data.get('name')!r} has no valid samples")
        return cls(
            name=str(data["name"]),
            environment=environment_from_dict(dict(data["environment"])),
            method=str(data["method"]),
            samples=samples,
            iterations=int(data["iterations"]),
            warmup_rounds=int(data.get("warmup_rounds", 0)),
            first_call_seconds=float(data.get("first_call_seconds", 0.0)),
            l2_flushed=bool(data["l2_flushed"]),
            bytes=_optional_int(data.get("bytes")),
            flops=_optional_int(data.get("flops")),
            ceiling_gbps=_optional_float(data.get("ceiling_gbps")),
            saved_at=str(data.get("saved_at", "")),
            extra=dict(data.get("extra") or {}),
            reference=str(data.get("reference", "")),
            reference_samples=[float(v) for v in data.get("reference_samples") or []],
            ceiling_bytes=_optional_int(data.get("ceiling_bytes", _copied_bytes(data))),
            session_ceiling=(SessionCeiling.from_dict(dict(data["session_ceiling"]))
                             if data.get("session_ceiling") else None),
            dispatch_samples=[float(v) for v in data.get("dispatch_samples") or []],
        )


def _rate(amount: int | None, seconds: float) -> float | None:
    if amount is None or seconds <= 0:
        return None
    return amount / seconds / 1e9


def _copied_bytes(data: dict[str, Any]) -> int | None:
    """Files written before ``ceiling_bytes`` existed: the paired copy's size is in its
    description (``copy of 12582912 B``), which was then the ceiling's copy."""
    found = re.fullmatch(r"copy of (\d+) B", str(data.get("reference", "")))
    return int(found.group(1)) if found and data.get("ceiling_gbps") is not None else None


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
