"""A fake ``compute-sanitizer`` for the CPU tier, and the fake kernels' way to be caught.

Run as ``python fake_compute_sanitizer.py [options] COMMAND...`` (the tests put a
``compute-sanitizer`` wrapper first on ``PATH``): it answers ``--version`` as the
real tool does, writes the banner to ``--log-file``, runs COMMAND with its
descriptors (the worker's pipes), and at its end writes the summary line and
returns COMMAND's exit status (a signal is passed on as the same signal).

A fake kernel calls :func:`plant` inside the sanitized process: like the real
tool's injected library, it appends the tool's report to the log when that
tool is the one running (memcheck does not see races).  Outside the fake
(``pytest`` without ``--gpu-sanitize``) :func:`plant` does nothing, which is
what such bugs look like without the sanitizer.

Every record below is copied from NVIDIA's Compute Sanitizer documentation
(the 2026.4 edition shipped in the ``nvidia-cuda-sanitizer-api`` 13.5 wheel,
``compute-sanitizer/docs/ComputeSanitizer/index.html``): the memcheck record
from "memcheck_demo Output with Memcheck (Debug Build)" (read instead of write,
and an address after the allocation), racecheck from "Block-level Hazards",
initcheck from "Using Initcheck" (global memory, the only kind it watches), synccheck from
"Understanding Synccheck Reports", the leak from "Leak Checking".  The version
text is that of the 13.5 wheel's ``compute-sanitizer --version``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

VERSION = """NVIDIA (R) Compute Sanitizer
Copyright (c) 2020-2026 NVIDIA Corporation
Version 2026.4.0.0 (build 39022338) (public-release)
"""
#: The fake's environment for the process it runs (what the injected library knows).
LOG_VARIABLE = "FAKE_SANITIZER_LOG"
TOOL_VARIABLE = "FAKE_SANITIZER_TOOL"
#: Set by a test: the version line the fake prints (an old tool, a broken one).
VERSION_VARIABLE = "FAKE_SANITIZER_VERSION"
#: Set by a test: a leak the fake reports when the process ends (outside any test).
LEAK_AT_EXIT_VARIABLE = "FAKE_SANITIZER_LEAK_AT_EXIT"
#: Set by a test: a failed API call the fake reports when the process ends (a lost context).
API_ERROR_AT_EXIT_VARIABLE = "FAKE_SANITIZER_API_ERROR_AT_EXIT"

P = "========="
RECORDS = {
    "memcheck": (
        f"{P} Invalid __global__ read of size 4 bytes\n"
        f"{P}     at {{kernel}}+0x90 in planted.py:12\n"
        f"{P}     by thread (1,0,0) in block (3,0,0)\n"
        f"{P}     Address 0x7cc43a800404 is out of bounds\n"
        f"{P}     and is 4 bytes after the nearest allocation at 0x7cc43a800000 of size "
        "1,028 bytes\n"
        f"{P}     Saved host backtrace up to driver entry point at kernel launch time\n"
        f"{P}         Host Frame: cuLaunchKernel [0x2cf3b5] in libcuda.so.1\n"
        f"{P}\n"),
    "racecheck": (
        f"{P} Error: Race reported between Write access at {{kernel}}+0x90 in "
        "{kernel}.py:41\n"
        f"{P}     and Read access at {{kernel}}+0x100 in planted.py:51 [508 hazards]\n"
        f"{P}\n"),
    "initcheck": (
        f"{P} Uninitialized __global__ memory read of size 4 bytes\n"
        f"{P}     at {{kernel}}+0x1a0 in planted.py:7\n"
        f"{P}     by thread (0,0,0) in block (0,0,0)\n"
        f"{P}     Address 0x0\n"
        f"{P}\n"),
    "synccheck": (
        f"{P} Barrier error detected. Divergent thread(s) in block\n"
        f"{P}     at {{kernel}}+0xf0 in planted.py:79\n"
        f"{P}     by thread (37,0,0) in block (0,0,0)\n"
        f"{P}\n"),
}
LEAK = (f"{P} Leaked 1,024 bytes at 0x7879c0800000\n"
        f"{P}     Saved host backtrace up to driver entry point at allocation time\n"
        f"{P}\n")


def plant(tool: str, kernel: str = "planted_kernel(float *)") -> None:
    """Inside a sanitized process: report ``tool``'s finding in ``kernel`` (when ``tool``
    is the tool running; nothing otherwise)."""
    log = os.environ.get(LOG_VARIABLE)
    if log and os.environ.get(TOOL_VARIABLE) == tool:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(RECORDS[tool].replace("{kernel}", kernel))


#: What every tool logs for a CUDA API call that fails after it stopped a kernel (copied
#: from the GPU run of 2026-11-27: memcheck and synccheck on an H200).
API_ERROR = (f'{P} Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified '
             'launch failure" on CUDA API call to cuCtxSynchronize.\n'
             f"{P}     Saved host backtrace up to driver entry point at error\n"
             f"{P}         Host Frame:  [0x26781] in cydriver.cpython-312-x86_64-linux-gnu.so\n"
             f"{P}\n")


def plant_api_error() -> None:
    """Inside a sanitized process: log a failed CUDA API call, as any tool does after it
    stopped a kernel (the context is lost, each later call fails)."""
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(API_ERROR)


def _count(log: str) -> int:
    with open(log, encoding="utf-8") as handle:
        return sum(1 for line in handle
                   if line.startswith(f"{P} ") and not line.startswith(f"{P}  ")
                   and "COMPUTE-SANITIZER" not in line)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        sys.stdout.write(os.environ.get(VERSION_VARIABLE, VERSION))
        return 0
    options: dict[str, str] = {"--tool": "memcheck"}
    while argv and argv[0].startswith("--"):
        if len(argv) < 2:
            sys.stderr.write(f"{P} Error: option {argv[0]} needs a value\n")
            return 1
        options[argv[0]] = argv[1]
        argv = argv[2:]
    if not argv or options["--tool"] not in RECORDS:
        sys.stderr.write(f"{P} Error: bad command line\n")
        return 1
    log = options.get("--log-file")
    if log is None:
        sys.stderr.write("this fake writes to --log-file only\n")
        return 1
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"{P} COMPUTE-SANITIZER\n")
    env = {**os.environ, LOG_VARIABLE: log, TOOL_VARIABLE: options["--tool"]}
    child = subprocess.Popen(argv, env=env, close_fds=False)
    returncode = child.wait()
    with open(log, "a", encoding="utf-8") as handle:
        if os.environ.get(LEAK_AT_EXIT_VARIABLE):
            handle.write(LEAK)
        if os.environ.get(API_ERROR_AT_EXIT_VARIABLE):
            handle.write(API_ERROR)
        found = _count(log)
        handle.write(f"{P} ERROR SUMMARY: {found} error{'s' if found != 1 else ''}\n")
    if returncode < 0:
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
