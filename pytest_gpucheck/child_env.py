"""Environment variables the plugin sets for the child processes it starts.

Kept apart from :mod:`pytest_gpucheck.processes.controller` so that reading them costs
nothing when a run starts no child.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: Directory a child writes its serialized reports into (one file per rank).
REPORT_SINK_VARIABLE = "PYTEST_GPUCHECK_REPORT_SINK"
#: Set in the child that runs the simulator items.
SIMULATOR_CHILD_VARIABLE = "PYTEST_GPUCHECK_SIMULATOR_CHILD"
#: ``<pid>@<host>`` of the pytest that started the child: the child ends its
#: process tree when that process is gone.
PARENT_VARIABLE = "PYTEST_GPUCHECK_PARENT"
#: ``<requests fd>,<replies fd>``: set in a long-lived worker, which serves the items
#: its parent names one at a time (:mod:`pytest_gpucheck.processes.pool`).
SERVE_VARIABLE = "PYTEST_GPUCHECK_SERVE"
#: JSON list of the ``conftest.py`` paths the parent loaded; the child loads them too.
CONFTESTS_VARIABLE = "PYTEST_GPUCHECK_CONFTESTS"
#: Set in a worker started under compute-sanitizer (``--gpu-sanitize``): its
#: ``--log-file``, which the worker reads after each test, and the tool.
SANITIZE_LOG_VARIABLE = "PYTEST_GPUCHECK_SANITIZE_LOG"
SANITIZE_TOOL_VARIABLE = "PYTEST_GPUCHECK_SANITIZE_TOOL"
#: ``<stdout fd>,<stderr fd>``: under the parent's ``-s``, the child writes what its
#: tests print to these (the parent's own terminal), live
#: (:class:`~pytest_gpucheck.processes.worker.OutputStream`).
STREAM_VARIABLE = "PYTEST_GPUCHECK_STREAM"
#: The parent's ``junit_family`` when it writes a junit file (``--junitxml``): the child
#: then keeps ``record_testsuite_property``'s properties for it (and warns as pytest does).
JUNIT_VARIABLE = "PYTEST_GPUCHECK_JUNIT_FAMILY"

#: JAX's GPU client reserves 75% of each GPU it initializes at its first operation
#: (``XLA_PYTHON_CLIENT_PREALLOCATE``), and it initializes every platform at once,
#: even for a CPU-only computation.  The plugin runs JAX beside numba-cuda, CuPy,
#: cuda-python and PyTorch in one process, several MPI ranks or xdist workers on
#: one GPU, and probe children that need a context of their own: with preallocation
#: the frameworks after the first JAX test run out of memory.  So JAX allocates on
#: demand (its caching allocator keeps what it used, which is what a test needs).
#: The option that sets how many CPU devices JAX presents, and the XLA flag it sets (read by
#: JAX only at start-up, so before any child process starts).
HOST_DEVICES_OPTION = "--gpu-host-devices"
XLA_FLAG = "--xla_force_host_platform_device_count"

JAX_MEMORY_POLICY = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
#: The preallocated fraction (jaxlib's xla_client reads both; the second is deprecated).
JAX_FRACTION_VARIABLES = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")


def apply_jax_memory_policy(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the JAX allocator variables the user has not set; return what was set.

    Must run before JAX creates its GPU client (its first operation) in this
    process; children the plugin starts later inherit the variables.  A value
    the user chose (``XLA_PYTHON_CLIENT_PREALLOCATE=true``, a memory fraction) is kept.
    """
    env = os.environ if environ is None else environ
    if any(key in env for key in JAX_FRACTION_VARIABLES):
        return {}  # the user sized the preallocation: respect it
    applied = {key: value for key, value in JAX_MEMORY_POLICY.items() if key not in env}
    env.update(applied)
    return applied
