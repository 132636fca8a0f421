"""How one timed round is measured on each backend.

Launches on a GPU are asynchronous: timing the Python call times the launch,
not the work.  Each backend therefore gets a timer that measures the device's
work:

* CUDA backends (``cupy``, ``torch-cuda``, ``numba-cuda``, ``cuda-python``)
  record a CUDA event before and after the round on the stream the work is
  queued on and read the elapsed time between them (device time; the round
  lasts at least 100 dispatches of one call, so the first call's dispatch,
  which lands between the events, is at most 1% of it: see
  :mod:`pytest_gpucheck.backends.timing`);
* JAX backends time on the host until ``jax.block_until_ready`` returns for the
  round's result (JAX exposes no events; dispatch is asynchronous);
* everything else (NumPy, Numba on the CPU and the simulator, PyTorch on the
  CPU) times on the host and calls the backend's ``synchronize()`` before
  stopping the clock.

On the CPU tier the host clock is chosen per backend (``gpu_bench_cpu_clock =
auto``, the default): NumPy and the CUDA simulator, whose work runs on the
calling thread, are timed in *CPU time of the process* (``time.process_time``);
backends with thread pools (``numba-cpu`` with ``prange``, ``jax-cpu``,
``torch-cpu``) in wall time, except in the gate's measured processes where their pools
are one thread (:data:`THREADS_VARIABLE`, set by the gate's lead: numba-cpu and
torch-cpu then run on the calling thread, and CPU time is honest).  On a shared CI
machine the wall time of a round
is mostly the neighbours: with a load of 7 on 2 cores the median of identical
windows moved by -60%..+60% in wall time and by +-7% in CPU time.  But idle
pool threads spin-wait, and spinning is CPU time (a 0.5 ms ``torch.add``
costs 5 ms of process CPU time on 2 threads), so CPU time is only honest for
single-threaded work; and it cannot see time spent waiting (sleep, I/O).
``process`` or ``wall`` force one clock for every CPU backend.  GPU backends
are never timed in CPU time.

A round runs the benchmarked callable ``iterations`` times and reports the
total; callers divide.  The timers themselves belong to the backends: the
generic ones are in :mod:`pytest_gpucheck.backends.timing`, each framework's in
its ``backends/<framework>/backend.py``, returned by
:meth:`~pytest_gpucheck.backends.base.Backend.event_timer`.  This module
chooses the host clock.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pytest_gpucheck.backends.timing import HOST_CLOCKS, CudaEventTimer, RoundTimer

if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend

CPU_CLOCK_CHOICES = ("auto", *HOST_CLOCKS)

#: The framework thread pools' size the gate's lead gave this measured process
#: (bench/interleave.py ``pinned_environment``: the interleaved pairs' processes and
#: the stored gate's fresh ones); absent in a user's own process.
THREADS_VARIABLE = "PYTEST_GPUCHECK_BENCH_THREADS"


def in_one_thread_pools() -> bool:
    """Whether this process is one the gate measures with one-thread framework pools.

    Read from the variable its lead set, not from ``OMP_NUM_THREADS`` itself: a user's
    own ``OMP_NUM_THREADS=1`` must not change the clock of the records a plain run
    saves (a saved record and a later one must be timed alike to compare)."""
    return os.environ.get(THREADS_VARIABLE) == "1"


def host_clock_for(backend: Backend, cpu_clock: str = "auto") -> str:
    """The host clock (``wall`` or ``process``) that times ``backend``.

    ``auto``: process CPU time for work on the calling thread (single-threaded
    backends, and numba-cpu and torch-cpu in the gate's one-thread pools: timed in wall
    time there, identical code's pairs disagreed by 23% to 81% on a loaded 2-core
    machine and 5 of 12 sizes were off by more than 20%, docs/benchmark-accuracy.md);
    wall time for thread pools, whose idle workers spin."""
    if cpu_clock not in CPU_CLOCK_CHOICES:
        raise ValueError(f"unknown CPU clock {cpu_clock!r}; use {', '.join(CPU_CLOCK_CHOICES)}")
    if backend.is_gpu:
        return "wall"
    if cpu_clock == "auto":
        one_thread = backend.single_threaded or (
            backend.single_threaded_in_one_thread_pools and in_one_thread_pools())
        return "process" if one_thread else "wall"
    return cpu_clock


def timer_for(backend: Backend, cpu_clock: str = "auto") -> RoundTimer:
    """The round timer that measures ``backend``'s device work.

    ``cpu_clock`` (``auto``, ``process`` or ``wall``) picks the host clock of
    CPU-tier backends; GPU backends use events, or wall time up to
    ``block_until_ready``.
    """
    return backend.event_timer(host_clock_for(backend, cpu_clock))


__all__ = ["CPU_CLOCK_CHOICES", "HOST_CLOCKS", "THREADS_VARIABLE", "CudaEventTimer", "RoundTimer",
           "host_clock_for", "in_one_thread_pools", "timer_for"]
