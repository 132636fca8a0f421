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
#: ``--gpu-bench-against``: runs of each benchmark's test on each side.  Where a
#: process's arrays land in memory moves a memory-bound kernel by up to +-9% (cache
#: sets, pages), the same for identical code; the gate averages over this many
#: placements per side.
DEFAULT_REPLICATES = 6
DEFAULT_BASELINE_DIR = ".gpucheck-baselines"
#: Gate settings a marker or an ini override line may set.
SETTING_NAMES = ("alpha", "min_effect", "min_rounds", "keep_fraction", "relative_min_effect",
                 "detect_effect", "power")
#: Measurement settings the ``gpu_bench`` marker may set.
MEASURE_KEYS = ("rounds", "max_rounds", "warmup_rounds", "iterations", "l2_flush", "bytes",
                "flops")
