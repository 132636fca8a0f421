"""The gate's settings, all read here: the thresholds of one benchmark
(:class:`GateSettings`), the ini lines that override them per benchmark and the
marker's, and the run's gate options (ini and command line) with the one-line
refusal of each bad value.

A new gate setting is added here (its reading and refusal), in ``bench/settings.py``
(its default) and in ``bench/plugin.py`` (its ini key or option).
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.bench.settings import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET,
    DEFAULT_DETECT_EFFECT,
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_INCONCLUSIVE,
    DEFAULT_KEEP_FRACTION,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_ROUNDS,
    DEFAULT_POWER,
    DEFAULT_RELATIVE_MIN_EFFECT,
    INCONCLUSIVE_CHOICES,
    PIN_CHOICES,
    SETTING_NAMES,
)
from pytest_gpucheck.bench.stats import rounds_for_power, shift_power


@dataclass(frozen=True)
class GateSettings:
    """Thresholds of the gate for one benchmark."""

    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    min_rounds: int = DEFAULT_MIN_ROUNDS
    keep_fraction: float = DEFAULT_KEEP_FRACTION
    #: ``min_effect`` of a comparison relative to an interleaved reference.
    relative_min_effect: float = DEFAULT_RELATIVE_MIN_EFFECT
    #: The slowdown the gate must catch (0.10 = 10%) ...
    detect_effect: float = DEFAULT_DETECT_EFFECT
    #: ... with at least this probability; below it, "unchanged" becomes "inconclusive".
    power: float = DEFAULT_POWER

    def with_overrides(self, overrides: dict[str, Any]) -> GateSettings:
        """A copy with ``alpha``/``min_effect``/``min_rounds`` replaced where given."""
        unknown = set(overrides) - set(SETTING_NAMES)
        if unknown:
            raise ValueError(f"unknown gate setting(s) {', '.join(sorted(unknown))}; "
                             f"use {', '.join(SETTING_NAMES)}")
        settings = replace(self, **{key: type(getattr(self, key))(value)
                                    for key, value in overrides.items()})
        settings.validate()
        return settings

    def validate(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"gate alpha must be in (0, 1), got {self.alpha}")
        if self.min_effect < 0.0 or self.relative_min_effect < 0.0:
            raise ValueError(f"gate min_effect and relative_min_effect must be >= 0, got "
                             f"{self.min_effect}, {self.relative_min_effect}")
        if self.min_rounds < 2:
            raise ValueError(f"gate min_rounds must be >= 2, got {self.min_rounds}")
        if not 0.0 < self.keep_fraction <= 1.0:
            raise ValueError(f"gate keep_fraction must be in (0, 1], got {self.keep_fraction}")
        if self.detect_effect <= 0.0:
            raise ValueError(f"gate detect_effect must be > 0, got {self.detect_effect}")
        if not 0.0 < self.power < 1.0:
            raise ValueError(f"gate power must be in (0, 1), got {self.power}")

    def design_effect(self, relative: bool) -> float:
        """The slowdown the power is computed for: ``detect_effect``, or twice the
        minimum effect when that is larger.

        A change must exceed the minimum effect to fail, so a gate cannot promise to
        catch changes near it; at twice the minimum the median condition has the same
        margin on both sides (the defaults, 5% and 10%, are exactly that).
        """
        threshold = self.relative_min_effect if relative else self.min_effect
        return max(self.detect_effect, 2.0 * threshold)

    def power_of(self, sigma: float, n_old: int, n_new: int, relative: bool) -> float:
        """Probability of flagging :meth:`design_effect` with these rounds and noise."""
        threshold = self.relative_min_effect if relative else self.min_effect
        return shift_power(sigma, n_old, n_new, math.log1p(self.design_effect(relative)),
                           self.alpha, math.log1p(threshold))

    def rounds_for(self, sigma: float, relative: bool, power: float | None = None) -> int:
        """Rounds per side for :meth:`power_of` to reach ``power`` (default ``self.power``)."""
        threshold = self.relative_min_effect if relative else self.min_effect
        return rounds_for_power(sigma, math.log1p(self.design_effect(relative)), self.alpha,
                                math.log1p(threshold), self.power if power is None else power)

    def kept(self, samples: list[float]) -> list[float]:
        """The fastest ``keep_fraction`` of ``samples`` (at least two)."""
        count = max(int(len(samples) * self.keep_fraction), min(2, len(samples)))
        return sorted(samples)[:count]


def parse_override_line(line: str) -> tuple[str, dict[str, str]]:
    """Parse an ini override line ``PATTERN key=value [key=value ...]``."""
    pattern, *assignments = line.split()
    settings = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not value:
            raise ValueError(f"gpu_bench_overrides line {line!r}: expected key=value, "
                             f"got {assignment!r}")
        settings[key] = value
    return pattern, settings


def settings_for(
    name: str, default: GateSettings, ini_overrides: list[str], marker_kwargs: dict[str, Any]
) -> GateSettings:
    """Gate settings for benchmark ``name``: ini lines matching it, then its marker."""
    settings = default
    for line in ini_overrides:
        if not line.strip():
            continue
        pattern, overrides = parse_override_line(line)
        if fnmatch.fnmatchcase(name, pattern):
            settings = settings.with_overrides(overrides)
    if marker_kwargs:
        settings = settings.with_overrides(marker_kwargs)
    return settings




def float_ini(config: pytest.Config, name: str) -> float:
    value = config.getini(name)
    try:
        return float(value)
    except ValueError:
        raise pytest.UsageError(f"ini {name} = {value!r} is not a number; "
                                f"set it to a number such as {DEFAULT_ALPHA}") from None



def gate_from_config(config: pytest.Config) -> tuple[GateSettings, list[str]]:
    """The run's gate settings (ini ``gpu_bench_alpha`` ...) and its override lines, each
    checked once here: a bad value is one usage line (exit 4) before collection."""
    try:
        gate = GateSettings(
            alpha=float_ini(config, "gpu_bench_alpha"),
            min_effect=float_ini(config, "gpu_bench_min_effect"),
            min_rounds=int(float_ini(config, "gpu_bench_min_rounds")),
            keep_fraction=float_ini(config, "gpu_bench_keep_fraction"),
            relative_min_effect=float_ini(config, "gpu_bench_relative_min_effect"),
            detect_effect=float_ini(config, "gpu_bench_detect_effect"),
            power=float_ini(config, "gpu_bench_power"),
        )
        gate.validate()
        overrides = [line for line in config.getini("gpu_bench_overrides") if line.strip()]
        for line in overrides:
            gate.with_overrides(parse_override_line(line)[1])
    except ValueError as exc:
        raise pytest.UsageError(f"gpucheck benchmark gate settings: {exc}") from None
    return gate, overrides


def stored_fails(config: pytest.Config, meets_targets: bool) -> bool:
    """Whether a stored regression fails its test: where the stored mode's measured
    rates meet the targets (``meets_targets``), or ``--gpu-bench-compare-fails`` / ini
    ``gpu_bench_stored_fails`` asks for it."""
    return meets_targets or bool(config.getoption("gpu_bench_compare_fails", False)) \
        or str(config.getini("gpu_bench_stored_fails")).strip().lower() in _TRUE


#: Ini values that switch a flag on.
_TRUE = ("1", "true", "yes", "on")


def read_against_folder(config: pytest.Config) -> Path | None:
    """``--gpu-bench-against=DIR``, checked before collection: a folder other than this
    checkout, and not combined with stored baselines."""
    value = config.getoption("gpu_bench_against", None)
    if value is None:
        return None
    folder = Path(value).resolve()
    if not folder.is_dir():
        raise pytest.UsageError(f"--gpu-bench-against={value}: no such folder; check the "
                                "baseline out there first (git worktree add "
                                f"{value} origin/main)")
    if folder == Path(config.rootpath).resolve():
        raise pytest.UsageError(f"--gpu-bench-against={value} is this checkout itself; give "
                                "a checkout of the baseline code (git worktree add ../base "
                                "origin/main)")
    if config.getoption("gpu_bench_compare", False):
        raise pytest.UsageError("--gpu-bench-against and --gpu-bench-compare are two gates; "
                                "use one (--gpu-bench-against on shared CI runners)")
    return folder


def number_setting(config: pytest.Config, name: str, valid: Callable[[float], bool],
                    needs: str) -> float:
    """The option ``--<name>`` (else ini ``<name>`` with underscores) as a number that
    ``valid`` accepts; otherwise one usage line ending in what it ``needs``."""
    key = name.replace("-", "_")
    value = config.getoption(key, None)
    where = f"--{name}"
    if value is None:
        value, where = config.getini(key), f"ini {key}"
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not valid(number):
        # The house's shape: an option as typed (--opt='value'), an ini key spaced.
        shown = f"{where}={value!r}" if where.startswith("--") else f"{where} = {value!r}"
        raise pytest.UsageError(f"{shown}: {needs}")
    return number


def read_family_level(config: pytest.Config) -> float:
    """``--gpu-bench-family-level`` (else ini ``gpu_bench_family_level``), in (0, 1)."""
    return number_setting(config, "gpu-bench-family-level", lambda level: 0.0 < level < 1.0,
                           "the chance that identical code fails the run must be a number "
                           f"in (0, 1), such as {DEFAULT_FAMILY_LEVEL}")


def read_budget(config: pytest.Config) -> float:
    """``--gpu-bench-budget`` (else ini ``gpu_bench_budget``): seconds per benchmark, > 0."""
    return number_setting(config, "gpu-bench-budget",
                           lambda budget: 0.0 < budget < float("inf"),
                           "the seconds a benchmark may take to decide must be a number "
                           f"above 0, such as {DEFAULT_BUDGET:g}")


def choice(config: pytest.Config, name: str, choices: tuple[str, ...], why: str) -> str:
    """``--NAME`` (else ini ``name``, NAME with dashes) as one of ``choices``; another value
    is one line naming the choices and ``why`` they matter."""
    flag = "--" + name.replace("_", "-")
    value = config.getoption(name, None)
    where = flag
    if value is None:
        value, where = config.getini(name), f"ini {name}"
    choice = str(value).strip().lower()
    if choice not in choices:
        shown = f"{where}={value!r}" if where.startswith("--") else f"{where} = {value!r}"
        raise pytest.UsageError(f"{shown}: use {' or '.join(choices)} ({why})")
    return choice


def read_pin(config: pytest.Config) -> str:
    """``--gpu-bench-pin`` (else ini ``gpu_bench_pin``): split or off."""
    return choice(config, "gpu_bench_pin", PIN_CHOICES,
                   "each side's own CPUs and thread pools, or as they are")


def read_inconclusive(config: pytest.Config) -> str:
    """``--gpu-bench-inconclusive`` (else ini ``gpu_bench_inconclusive``): pass or fail."""
    return choice(config, "gpu_bench_inconclusive", INCONCLUSIVE_CHOICES,
                   "whether a benchmark the gate could not decide fails the run; "
                   f"{DEFAULT_INCONCLUSIVE} by default")


def read_placement_seed(config: pytest.Config) -> int:
    """Ini ``gpu_bench_placement_seed``, else a fresh one (printed in every verdict, so a
    run can be repeated with the same placement offsets)."""
    value = str(config.getini("gpu_bench_placement_seed")).strip()
    if not value:
        return int.from_bytes(os.urandom(4), "little")
    try:
        return int(value)
    except ValueError:
        raise pytest.UsageError(f"ini gpu_bench_placement_seed = {value!r}: give a whole "
                                "number, or leave it empty for a fresh seed") from None

