"""The gate's verdict: the type, its statuses and its serialisation (``as_dict`` for
the report and the xdist wire, ``from_dict`` back), in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pytest_gpucheck.bench.gate.settings import GateSettings
from pytest_gpucheck.bench.settings import DEFAULT_DETECT_EFFECT, DEFAULT_POWER

Status = Literal["regression", "improvement", "unchanged", "inconclusive", "no-baseline",
                 "not-comparable"]


#: What an interleaved comparison is relative to (``Verdict.relative_to``).
INTERLEAVED = "the baseline checkout timed round by round beside it"

#: The statuses of a comparison that was made (the family counts them).
JUDGED = ("regression", "improvement", "unchanged", "inconclusive")


@dataclass(frozen=True)
class Verdict:
    """The gate's decision for one benchmark, with the figures behind it."""

    name: str
    backend: str
    device: str
    status: Status
    #: Medians of the rounds the gate compares (the fastest ``keep_fraction``).
    baseline_median: float | None = None
    new_median: float | None = None
    pvalue: float | None = None
    #: GateSettings is frozen, so one shared default instance is safe.
    settings: GateSettings = GateSettings()  # noqa: RUF009
    reason: str = ""
    #: The reference the change is measured against (``copy of 12582912 B``), or "".
    relative_to: str = ""
    #: With a reference: the change of the median ratio benchmark / reference.
    relative_change: float | None = None
    #: Per-round noise of the compared values (robust standard deviation of their log).
    noise: float | None = None
    #: Probability that these rounds, with this noise, catch the design effect.
    power: float | None = None
    #: ``--gpu-bench-against``: one log change per pair of processes (the evidence).
    pair_figures: tuple[float, ...] | None = None
    #: ... the median of that pair's blocks (log ratios; the noise within a pair).
    pair_blocks: tuple[tuple[float, ...], ...] | None = None
    #: The change's two-sided interval at ``level`` (as changes: -0.02 = 2% faster).
    interval: tuple[float, float] | None = None
    #: The two-sided level the interleaved verdict was judged at (family level over the
    #: benchmarks of the family at this step of Holm's method).
    level: float | None = None
    #: How many benchmarks the family held when this verdict was judged.
    family: int | None = None
    #: Holm-adjusted p-value (once the run's family was judged).
    adjusted_p: float | None = None
    #: A stored-baseline regression that does not fail the run (the stored mode misses
    #: its targets: :data:`STORED_MEASURED`); ``--gpu-bench-compare-fails`` fails on it.
    advisory: bool = False
    #: ``--gpu-bench-compare`` at the process level: the log summary of each stored
    #: process and of each process of this run (the evidence, :mod:`.stored`).
    process_figures: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    #: ``--gpu-bench-against``: the pairs done at each look taken (one entry: a single
    #: look), the share of the level the last look spent (:mod:`.sequential`), why the
    #: looks stopped (``decided``, ``budget``, ``last look``), the schedule (first,
    #: step, max_looks) and the budget in seconds.
    looks: tuple[int, ...] | None = None
    look_share: float = 1.0
    stopped: str = ""
    schedule: dict[str, int] | None = None
    budget: float | None = None
    #: How the measured processes' CPUs and thread pools were held, in words.
    pinning: str = ""
    #: The seed of the random placement offsets of the measured processes.
    placement_seed: int | None = None

    @property
    def change(self) -> float | None:
        """Relative change (+0.10 = 10% slower): of the median ratio to the reference
        when there is one, else of the median time."""
        if self.relative_change is not None:
            return self.relative_change
        if self.baseline_median is None or self.new_median is None or self.baseline_median <= 0:
            return None
        return self.new_median / self.baseline_median - 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "device": self.device,
            "status": self.status,
            "baseline_median": self.baseline_median,
            "new_median": self.new_median,
            "change": self.change,
            "pvalue": self.pvalue,
            "pair_figures": list(self.pair_figures) if self.pair_figures else None,
            "pair_blocks": [list(b) for b in self.pair_blocks] if self.pair_blocks else None,
            "interval": list(self.interval) if self.interval else None,
            "level": self.level,
            "family": self.family,
            "adjusted_p": self.adjusted_p,
            "advisory": self.advisory,
            "process_figures": [list(side) for side in self.process_figures]
            if self.process_figures else None,
            "looks": list(self.looks) if self.looks else None,
            "look_share": self.look_share,
            "stopped": self.stopped,
            "schedule": self.schedule,
            "budget": self.budget,
            "pinning": self.pinning,
            "placement_seed": self.placement_seed,
            "alpha": self.settings.alpha,
            "min_effect": self.settings.min_effect,
            "relative_min_effect": self.settings.relative_min_effect,
            "keep_fraction": self.settings.keep_fraction,
            "reason": self.reason,
            "relative_to": self.relative_to,
            "relative_change": self.relative_change,
            "noise": self.noise,
            "power": self.power,
            "detect_effect": self.settings.detect_effect,
            "power_target": self.settings.power,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """The verdict :meth:`as_dict` wrote (from a worker's report, or the report file)."""
        settings = GateSettings(
            alpha=float(data["alpha"]), min_effect=float(data["min_effect"]),
            keep_fraction=float(data.get("keep_fraction", 1.0)),
            relative_min_effect=float(data.get("relative_min_effect", 0.05)),
            detect_effect=float(data.get("detect_effect", DEFAULT_DETECT_EFFECT)),
            power=float(data.get("power_target", DEFAULT_POWER)))
        processes = data.get("process_figures")
        return cls(
            name=data["name"], backend=data["backend"], device=data["device"],
            status=data["status"], baseline_median=data["baseline_median"],
            new_median=data["new_median"], pvalue=data["pvalue"], settings=settings,
            reason=data.get("reason", ""), relative_to=data.get("relative_to", ""),
            relative_change=data.get("relative_change"), noise=data.get("noise"),
            power=data.get("power"),
            pair_figures=tuple(data["pair_figures"]) if data.get("pair_figures") else None,
            pair_blocks=tuple(tuple(b) for b in data["pair_blocks"])
            if data.get("pair_blocks") else None,
            interval=tuple(data["interval"]) if data.get("interval") else None,
            level=data.get("level"), family=data.get("family"),
            adjusted_p=data.get("adjusted_p"), advisory=bool(data.get("advisory")),
            process_figures=(tuple(processes[0]), tuple(processes[1])) if processes else None,
            looks=tuple(data["looks"]) if data.get("looks") else None,
            look_share=float(data.get("look_share") or 1.0),
            stopped=str(data.get("stopped") or ""), schedule=data.get("schedule"),
            budget=data.get("budget"), pinning=str(data.get("pinning") or ""),
            placement_seed=data.get("placement_seed"))
