"""Synchronized benchmarks on every backend, baselines per device, and a
noise-robust regression gate, on top of pytest-benchmark.

The modules, one concept each:

* :mod:`.timing` - how a round is timed per backend (CUDA events,
  ``block_until_ready``, synchronize);
* :mod:`.measure` - warm-up, calibration, rounds, and the clock handed to
  pytest-benchmark;
* :mod:`.device_copy`, :mod:`.ceiling`, :mod:`.session_ceiling` - device copies,
  the L2 flush, the measured bandwidth ceiling and the session's best copy;
* :mod:`.environment`, :mod:`.records` - what a result says about where it ran;
* :mod:`.baseline` - storage per (device model, backend), atomic and
  concurrency-safe;
* :mod:`.stats`, :mod:`.gate` - Mann-Whitney U and the regression decision;
* :mod:`.summary`, :mod:`.plot` - the report and the picture;
* :mod:`.fixture`, :mod:`.plugin` - the ``gpu_benchmark`` fixture and hooks.

Importing this package imports no framework.
"""

from __future__ import annotations
