"""Default settings of the benchmark feature, importable without NumPy.

The plugin module reads these when pytest registers its options; everything
that needs NumPy is imported only once a benchmark runs.
"""

from __future__ import annotations

DEFAULT_ALPHA = 0.001
DEFAULT_MIN_EFFECT = 0.07
#: The same, for a comparison of ratios to an interleaved reference: the
#: reference cancels the machine's drift, so a smaller change is still real.
DEFAULT_RELATIVE_MIN_EFFECT = 0.05
DEFAULT_KEEP_FRACTION = 0.5
#: The gate's promise: a slowdown of DEFAULT_DETECT_EFFECT (10%) is caught with
#: probability DEFAULT_POWER (90%); where the measured noise and the rounds cannot
#: keep it, the verdict is "inconclusive" instead of "unchanged".
DEFAULT_DETECT_EFFECT = 0.10
DEFAULT_POWER = 0.90
#: Below this many rounds on either side the comparison is not attempted.
DEFAULT_MIN_ROUNDS = 10
DEFAULT_ROUNDS = 60
#: Cap on the rounds a benchmark adds when its noise needs more for the power above.
DEFAULT_MAX_ROUNDS = 600
DEFAULT_WARMUP_ROUNDS = 2
#: ``--gpu-bench-against``: pairs of processes (one per checkout) that each time every
#: benchmark once.  Where a process's arrays land in memory moves a memory-bound kernel
#: by up to +-9% (cache sets, pages) for every block that process times, so the pair is
#: the gate's unit of evidence: ten pairs keep 90% power to catch +10% at a between-pair
#: SD of 3% with 30 benchmarks in the family (docs/benchmark-evidence.md).
DEFAULT_REPLICATES = 10
#: ``--gpu-bench-against``: seconds one benchmark may take to decide (its pairs, the
#: later looks included: bench/sequential.py).  Per benchmark, not per run: a
#: benchmark's verdict then does not depend on how long the benchmarks before it took,
#: and a run's longest time is this times its benchmarks.
DEFAULT_BUDGET = 120.0
#: ``--gpu-bench-against``: hold each measured process's CPUs and framework threads
#: (``split``: a side's own CPUs and thread pools of that size; ``off``: as they are).
DEFAULT_PIN = "split"
#: ``--gpu-bench-inconclusive``: whether a benchmark the gate could not decide fails the
#: run.  ``pass`` by default: on shared runners most benchmarks can be undecided (issue 43
#: measured 3-4 of 6 NumPy and every torch-cpu and numba-cpu benchmark per session at
#: 2 shared cores), and an undecided benchmark is no evidence of a slowdown; a required
#: check that must not pass on missing evidence sets ``fail`` (docs/benchmarks.md).
DEFAULT_INCONCLUSIVE = "pass"
INCONCLUSIVE_CHOICES = ("pass", "fail")
PIN_CHOICES = ("split", "off")
#: Blocks (two pairs of rounds each) every pair of processes times at least.
MIN_BLOCKS_PER_PAIR = 2
#: ``--gpu-bench-against``: the chance that a run of identical code fails anywhere
#: (family-wise, Holm's method over every benchmark the run compares).
DEFAULT_FAMILY_LEVEL = 0.01
DEFAULT_BASELINE_DIR = ".gpucheck-baselines"
#: ``--gpu-bench-save`` / ``--gpu-bench-compare``: fresh processes that each time every
#: benchmark (one summary per process is stored and compared): rounds of one process
#: share its placement, so the process is the stored gate's unit of evidence.
DEFAULT_PROCESSES = 5
#: Fewest rounds each of those processes times (its summary is the median of the
#: fastest half of them).
MIN_ROUNDS_PER_PROCESS = 6
#: Gate settings a marker or an ini override line may set.
SETTING_NAMES = ("alpha", "min_effect", "min_rounds", "keep_fraction", "relative_min_effect",
                 "detect_effect", "power")
#: Measurement settings the ``gpu_bench`` marker may set.
MEASURE_KEYS = ("rounds", "max_rounds", "warmup_rounds", "iterations", "l2_flush", "bytes",
                "flops")
