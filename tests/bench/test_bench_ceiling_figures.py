"""A GPU benchmark above 100% of the copy ceiling is a measurement error, not a result.

The first H100 run printed ``test_sum[numba-cuda]: ... (182% of the 578 GB/s copy
ceiling)``: a copy of the same bytes timed in one-call rounds, whose start event is
recorded before the host dispatches the call, against a kernel timed in rounds of
several calls.  Nothing that reads and writes the bytes beats a device copy of them.
"""

from __future__ import annotations

import dataclasses

from pytest_gpucheck.bench.environment import Environment
from pytest_gpucheck.bench.records import BenchmarkRecord
from pytest_gpucheck.bench.summary import derived_figures, gate_markdown

H100 = Environment("NVIDIA H100 80GB HBM3", "9.0", "13.0", "13.0", "numba-cuda", "0.30.4",
                   "3.12.3")


def _record(gbps_of_ceiling: float, method: str = "cuda-events") -> BenchmarkRecord:
    # 134 MB in 128 us is 1.05e3 GB/s; the ceiling is set so the fraction is as asked.
    nbytes, seconds = 134_217_728, 128e-6
    return BenchmarkRecord(name="bench.py::test_sum[numba-cuda]", environment=H100,
                           method=method, samples=[seconds] * 12, iterations=2,
                           warmup_rounds=2, first_call_seconds=0.2, l2_flushed=False,
                           bytes=nbytes, flops=None,
                           ceiling_gbps=nbytes / seconds / 1e9 / gbps_of_ceiling)


def test_a_gpu_figure_above_the_copy_is_reported_as_a_measurement_problem() -> None:
    line = derived_figures(_record(1.82))
    assert "182%" not in line, line
    assert "(MEASUREMENT ERROR, not a faster kernel: the copy of the same bytes on this " \
           "device measured 576 GB/s, slower than this kernel" in line, line


def test_a_gpu_figure_below_the_copy_is_a_fraction() -> None:
    assert "(82% of the 1.28e+03 GB/s copy ceiling)" in derived_figures(_record(0.82))


def test_on_the_cpu_a_kernel_may_beat_a_copy() -> None:
    """A CPU copy also reads its destination (write-allocate): above 100% is honest there."""
    line = derived_figures(dataclasses.replace(_record(1.2), method="perf_counter"))
    assert "120% of the" in line, line
    assert "a copy of the same bytes is slower than this kernel here" in line, line


def test_the_markdown_table_has_no_fraction_above_a_device_copy() -> None:
    text = gate_markdown([(_record(1.82), None)], compared=False)
    assert "182%" not in text, text
    assert "MEASUREMENT ERROR" in text, text
