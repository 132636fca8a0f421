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
#: Below this many rounds on either side the comparison is not attempted.
DEFAULT_MIN_ROUNDS = 10
DEFAULT_ROUNDS = 60
DEFAULT_WARMUP_ROUNDS = 2
DEFAULT_BASELINE_DIR = ".gpucheck-baselines"
#: Gate settings a marker or an ini override line may set.
SETTING_NAMES = ("alpha", "min_effect", "min_rounds", "keep_fraction", "relative_min_effect")
#: Measurement settings the ``gpu_bench`` marker may set.
MEASURE_KEYS = ("rounds", "warmup_rounds", "iterations", "l2_flush", "bytes", "flops")
