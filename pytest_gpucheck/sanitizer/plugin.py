"""``--gpu-sanitize``: run GPU-backend items under NVIDIA compute-sanitizer, per test.

A feature plugin (listed in ``FEATURE_PLUGINS``).  Guard bands and NumPy
references cannot see a kernel that reads out of bounds and happens to get a
plausible value, a race that resolved well this time, a read of uninitialised
memory or a barrier in divergent code; compute-sanitizer's tools can.

The sanitizer's router (:mod:`pytest_gpucheck.sanitizer.router`) starts
one long-lived worker per tool and backend key, under ``compute-sanitizer --tool
TOOL --log-file LOG``; every GPU-backend item runs once in each tool's worker.  The worker
synchronises the item's devices after each phase (setup, call, teardown) and
reads what the sanitizer appended to its log since the last look: any error
record there belongs to that phase, which fails with the records in a
``gpucheck sanitizer`` section.  What the log holds when the worker ends
(session teardown, interpreter exit) and was never read by a test is an error
outside any test: it fails the run with its text.  A worker that dies fails the
item it was running (the isolation rules) and the log's unread part is shown.

While sanitizing, the frameworks' memory pools are off in these workers: a pool
hands out slices of one big allocation, so an out-of-bounds access that stays
inside the pooled block is invisible to memcheck.

:func:`sanitize_cpu_backend_for_tests` is a test hook: it routes a CPU
backend's items through the sanitizer, so the CPU tier tests all of this with
a fake ``compute-sanitizer`` (``tests/fake_compute_sanitizer.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.checking.hypothesis_profiles import SANITIZE_DIVISOR as EXAMPLE_DIVISOR
from pytest_gpucheck.environment import SANITIZE_LOG_VARIABLE, SANITIZE_TOOL_VARIABLE
from pytest_gpucheck.sanitizer.log import (
    SECTION,
    device_errors,
    error_text,
    errors,
    outside_mark,
    read_mark,
)

OPTION = "--gpu-sanitize"
#: compute-sanitizer's tools, one per run (its ``--tool``).
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
#: Key of an xdist worker's output that carries the sanitized workers' deaths.
DEATHS_OUTPUT = "gpucheck_sanitizer_deaths"
#: The executable's name (on ``PATH``, in a CUDA toolkit's ``bin``, in the wheels).
EXECUTABLE = "compute-sanitizer"
#: Where the ``nvidia-cuda-sanitizer-api`` wheels put it, under the ``nvidia`` namespace
#: package: 13.x ships ``nvidia/cu13/bin/compute-sanitizer`` (read from
#: nvidia_cuda_sanitizer_api-13.5.25), 12.x (``nvidia-cuda-sanitizer-api-cu12``)
#: ``nvidia/cuda_sanitizer_api/bin/compute-sanitizer`` (read from 12.9.79).
WHEEL_PATHS = ("cu13/bin/compute-sanitizer", "cuda_sanitizer_api/bin/compute-sanitizer")
POOLS_OFF_NOTE = ("memory pools off in the sanitized workers (CuPy: set_allocator(None); "
                  "PyTorch: PYTORCH_NO_CUDA_MEMORY_CACHING=1; JAX: "
                  "XLA_PYTHON_CLIENT_ALLOCATOR=platform; numba-cuda has none)")
#: The first compute-sanitizer release of each CUDA major version (``--version``
#: prints ``Version YYYY.N...``).  One older than the driver's major version predates
#: the driver's interface.  Read from NVIDIA's wheels: CUDA 12.9 ships 2025.2.1, 13.0
#: ships 2025.3.1, 13.5 ships 2026.4.0; 2022.4 is CUDA 12.0's (its release notes).
FIRST_RELEASE = {12: (2022, 4), 13: (2025, 3)}
#: Seconds ``compute-sanitizer --version`` may take.
VERSION_TIMEOUT = 60.0

SANITIZE_KEY = pytest.StashKey["Sanitizing"]()

#: Backend names routed through the sanitizer by the test hook (this process only).
_TEST_ROUTED: set[str] = set()
#: The test hook that stands for the planted-bug kernels on a CPU backend.
_PLANTED: list[Callable[[str, str, bool], None]] = []
#: In a sanitized worker: the tool it runs under.
_RUNNING: list[str] = []
#: initcheck looks at shared memory only when asked (``--initcheck-address-space``,
#: added in compute-sanitizer 2025.4: its release notes).
INITCHECK_SHARED_SINCE = (2025, 4)


def sanitize_cpu_backend_for_tests(name: str) -> None:
    """Test hook: under ``--gpu-sanitize``, route ``name`` (a CPU backend) through the
    sanitizer as if it were a GPU backend.  Call it from a ``conftest.py``; it lets the
    CPU tier run the whole path with a fake ``compute-sanitizer`` first on ``PATH``."""
    _TEST_ROUTED.add(name)


def on_planted_bug_for_tests(callback: Callable[[str, str, bool], None]) -> None:
    """Test hook: ``callback(tool, case, bug)`` stands for the planted-bug kernels of
    ``conformance/sanitizer_planted.py`` on a backend routed by
    :func:`sanitize_cpu_backend_for_tests` (a fake sanitizer's way to see them)."""
    _PLANTED.append(callback)


def planted_bug(tool: str, case: str, *, bug: bool) -> bool:
    """Run the test hook's stand-in for a planted-bug kernel; False when there is none."""
    for callback in _PLANTED:
        callback(tool, case, bug)
    return bool(_PLANTED)


def sanitized_tool() -> str | None:
    """The tool this process runs under (a ``--gpu-sanitize`` worker), else None."""
    return _RUNNING[-1] if _RUNNING else None


def tool_args(tool: str, version: tuple[int, int] | None) -> list[str]:
    """The options of one tool beyond the common ones."""
    if tool == "initcheck" and version is not None and version >= INITCHECK_SHARED_SINCE:
        return ["--initcheck-address-space", "all"]  # global and shared memory
    return []


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser.getgroup("gpucheck"))


def add_options(group: Any) -> None:
    group.addoption(
        OPTION, dest="gpu_sanitize", default=None, metavar="TOOLS",
        help="run GPU-backend items under NVIDIA compute-sanitizer with these tools "
        f"(comma-separated: {', '.join(TOOLS)}); each error fails the test that was running, "
        "with the sanitizer's report")


def parse_tools(text: str) -> tuple[str, ...]:
    """The tools of ``--gpu-sanitize=TEXT``, in order, without repeats; one-line
    :class:`pytest.UsageError` for anything else."""
    names = [part.strip() for part in text.split(",")]
    unknown = [name for name in names if name not in TOOLS]
    if not text.strip() or unknown:
        what = f"unknown tool {unknown[0]!r}" if unknown and unknown[0] else "is empty"
        raise pytest.UsageError(
            f"{OPTION}={text!r}: {what}; use one or more of {', '.join(TOOLS)}, "
            f"comma-separated (e.g. {OPTION}=memcheck,racecheck)")
    return tuple(dict.fromkeys(names))


# -- finding the tool ------------------------------------------------------------------------
def candidates(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where compute-sanitizer may be, in the order looked at: ``PATH``, the CUDA toolkit
    (``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda``), the ``nvidia-cuda-sanitizer-api``
    wheels."""
    env = os.environ if environ is None else environ
    found: list[Path] = []
    on_path = shutil.which(EXECUTABLE, path=env.get("PATH", os.defpath))
    if on_path:
        found.append(Path(on_path))
    for root in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            found.append(Path(root) / "bin" / EXECUTABLE)
    import importlib.util

    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec("nvidia")  # a namespace package: imports nothing
        for folder in (spec.submodule_search_locations or []) if spec else []:
            found += [Path(folder) / relative for relative in WHEEL_PATHS]
    return found


def find_tool(environ: Mapping[str, str] | None = None) -> Path | None:
    """The first executable compute-sanitizer of :func:`candidates`, or None."""
    for path in candidates(environ):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def tool_version(path: Path) -> tuple[int, int] | str:
    """``(year, release)`` from ``compute-sanitizer --version``, or why it cannot be read."""
    from pytest_gpucheck.processes import run_command

    done = run_command([str(path), "--version"], timeout=VERSION_TIMEOUT)
    if isinstance(done, str):  # it did not start, or did not end in time
        return f"{path} --version failed ({done})"
    match = re.search(r"Version (\d+)\.(\d+)", done.stdout)
    if done.returncode != 0 or match is None:
        return (f"{path} --version exited with code {done.returncode} without a version line "
                f"({(done.stdout + done.stderr).strip()[:200]!r})")
    return int(match.group(1)), int(match.group(2))


def version_problem(version: tuple[int, int], driver_version: int | None) -> str | None:
    """Why a sanitizer of ``version`` cannot check under a driver of ``driver_version``
    (``cuDriverGetVersion``: 13000 for CUDA 13.0), or None."""
    if driver_version is None:
        return None
    major = driver_version // 1000
    first = FIRST_RELEASE.get(major)
    if first is None or version >= first:
        return None
    return (f"compute-sanitizer {version[0]}.{version[1]} is older than the driver's CUDA "
            f"{major} (it needs {first[0]}.{first[1]} or newer); install the CUDA {major} "
            f"toolkit's or `pip install pytest-gpucheck[sanitize-cu{major}]`")


def missing_tool_message() -> str:
    return (f"{OPTION}: compute-sanitizer not found on PATH, in CUDA_HOME/CUDA_PATH/"
            "/usr/local/cuda/bin or in the nvidia-cuda-sanitizer-api wheel; install it with "
            "`pip install pytest-gpucheck[sanitize-cu13]` (CUDA 13) or "
            "`[sanitize-cu12]` (CUDA 12), or put the toolkit's bin on PATH")


# -- the run's plan (parent) -----------------------------------------------------------------
@dataclass
class Sanitizing:
    """What this run sanitizes: the tools, the executable, the backends routed."""

    tools: tuple[str, ...]
    executable: Path | None
    backends: frozenset[str]
    version: tuple[int, int] | None = None


def sanitizing(config: pytest.Config) -> Sanitizing | None:
    """This run's plan (None without ``--gpu-sanitize`` or in a child)."""
    return config.stash.get(SANITIZE_KEY, None)


def is_sanitized(item: pytest.Item) -> bool:
    """Whether ``item`` runs in a sanitized worker (an item of a sanitized backend that
    is not skipped by a marker and is no MPI test)."""
    plan = sanitizing(item.config)
    if plan is None or not plan.backends:
        return False
    from pytest_gpucheck.mpi.marker import our_mark

    if item.get_closest_marker("skip") is not None or our_mark(item) is not None:
        return False
    from pytest_gpucheck.selection import item_backends

    return bool(item_backends(item) & plan.backends)


def plan_run(config: pytest.Config) -> Sanitizing | None:
    """Validate ``--gpu-sanitize`` and find the tool; one-line usage error (exit 4) before
    collection when a GPU backend is selected and no usable tool is found."""
    text = config.getoption("gpu_sanitize", None)
    if text is None or os.environ.get(SANITIZE_LOG_VARIABLE):
        return None
    tools = parse_tools(str(text))
    from pytest_gpucheck.backends import GPU_BACKENDS
    from pytest_gpucheck.environment import launched_rank
    from pytest_gpucheck.selection import get_selection

    if config.getoption("gpu_isolate", "auto") == "none":
        raise pytest.UsageError(
            f"{OPTION} runs the GPU items in sanitized worker processes; drop "
            "--gpu-isolate=none (or drop the sanitizer)")
    if launched_rank() is not None:
        raise pytest.UsageError(
            f"{OPTION} cannot run under an MPI launcher (each rank would need its own "
            "sanitizer); run the sanitized tests without mpiexec/srun")
    selection = get_selection(config)
    routed = {name for name in selection.names
              if (name in GPU_BACKENDS) or name in _TEST_ROUTED}
    if not routed:
        return Sanitizing(tools, None, frozenset())
    executable = find_tool()
    if executable is None:
        raise pytest.UsageError(missing_tool_message())
    version = tool_version(executable)
    if isinstance(version, str):
        raise pytest.UsageError(f"{OPTION}: {version}; reinstall compute-sanitizer")
    from pytest_gpucheck.backends.devices import cuda_driver

    problem = version_problem(version, cuda_driver().version)
    if problem is not None:
        raise pytest.UsageError(f"{OPTION}: {problem}")
    return Sanitizing(tools, executable, frozenset(routed), version)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if os.environ.get(SANITIZE_LOG_VARIABLE):
        config.pluginmanager.register(SanitizedChild(config), "gpucheck-sanitized-child")
        return
    plan = plan_run(config)
    if plan is None:
        return
    config.stash[SANITIZE_KEY] = plan
    if plan.backends:
        assert plan.executable is not None  # plan_run found it for the routed backends
        from pytest_gpucheck.sanitizer.router import SanitizerRouter

        router = SanitizerRouter(
            config, executable=plan.executable, claims=is_sanitized,
            tools=[(tool, tool_args(tool, plan.version)) for tool in plan.tools],
            deaths_output=DEATHS_OUTPUT)
        config.pluginmanager.register(router, "gpucheck-sanitizer-router")


def pytest_report_header(config: pytest.Config) -> list[str]:
    plan = sanitizing(config)
    if plan is None:
        return []
    if not plan.backends:
        return [f"gpucheck: {OPTION}: no GPU backend selected, nothing is sanitized "
                "(select one with --gpu-backends=gpu)"]
    from pytest_gpucheck.checking.hypothesis_profiles import PROFILES

    examples = ", ".join(
        f"{name} {values['max_examples']} -> "
        f"{max(2, int(str(values['max_examples'])) // EXAMPLE_DIVISOR)}"
        for name, values in PROFILES.items())
    version = f"{plan.version[0]}.{plan.version[1]}" if plan.version else "?"
    return [
        f"gpucheck: sanitizing {', '.join(sorted(plan.backends))} with "
        f"{', '.join(plan.tools)} (compute-sanitizer {version}, {plan.executable}); "
        f"{POOLS_OFF_NOTE}",
        f"gpucheck: {OPTION}: the conformance suites run 1/{EXAMPLE_DIVISOR} of their "
        f"hypothesis examples per backend, at least 2 ({examples})",
    ]


# -- the sanitized worker's side ----------------------------------------------------------------
class SanitizedChild:
    """Worker-side plugin: after each phase of a test, synchronise its devices and fail the
    phase with what the sanitizer logged meanwhile."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # Popped: a pytest a test starts (pytester, a user's subprocess) is no worker.
        self.log = Path(os.environ.pop(SANITIZE_LOG_VARIABLE))
        self.tool = os.environ.pop(SANITIZE_TOOL_VARIABLE, "?")
        _RUNNING.append(self.tool)
        self.offset = 0
        self._cupy_done = False
        #: The test whose kernels the sanitizer last reported (its later failed API calls
        #: are the same finding).
        self._device_error_in: str | None = None
        from pytest_gpucheck.checking.hypothesis_profiles import use_sanitize_divisor

        use_sanitize_divisor()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # What the sanitizer logged during start-up and collection (module imports) is
        # no test's: the parent reports it as outside any test.
        before = self._read()
        self._write(outside_mark(self.log), before)
        self._write(read_mark(self.log), str(self.offset))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        from pytest_gpucheck.selection import item_backends

        if not self._cupy_done and "cupy" in item_backends(item):
            self._cupy_done = True
            _cupy_pool_off()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        self._synchronize(item)
        text = self._read()
        self._write(read_mark(self.log), str(self.offset))
        found = error_text(text)
        if not found:
            return report
        if device_errors(errors(text)):
            self._device_error_in = item.nodeid
        elif self._device_error_in == item.nodeid:
            # Failed API calls after this test's own device error (the sanitizer stopped
            # the kernel, the context is lost): the same finding, not another one.
            report.sections.append(
                (f"{SECTION} ({self.tool}): after the error reported above", found))
            return report
        report.sections.append((f"{SECTION} ({self.tool})", found))
        headline = (f"compute-sanitizer ({self.tool}) reported errors during the "
                    f"{report.when} of this test:\n{found}")
        if not report.failed:
            report.outcome = "failed"
            report.longrepr = headline
        else:
            # The sanitizer's finding is the cause; the test's own error (a failed
            # launch, a lost context) follows from it, so the finding leads the message.
            report.longrepr = (f"{headline}\n\nThe test failed too (the sanitizer stops a "
                               f"kernel it reports, so its launch fails):\n"
                               f"{report.longrepr}")
        return report

    def _synchronize(self, item: pytest.Item) -> None:
        """Wait for the item's kernels: memcheck, racecheck and synccheck report a kernel's
        errors when it completes, so they are in the log once the device is idle."""
        from pytest_gpucheck.selection import get_selection, item_backends

        selection = get_selection(item.config)
        for name in sorted(item_backends(item)):
            # A poisoned context raises here; the test's own result and the worker's
            # health probe say so, and the log read below still shows the cause.
            with contextlib.suppress(Exception):
                backend = selection.backend(name)
                if backend.probe().available:
                    backend.synchronize()

    def _read(self) -> str:
        try:
            with self.log.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return ""
        data = data[: data.rfind(b"\n") + 1]  # a line still being written: next time
        self.offset += len(data)
        return data.decode("utf-8", errors="replace")

    @staticmethod
    def _write(path: Path, text: str) -> None:
        from pytest_gpucheck.reporting.atomic_files import write_text_atomically

        with contextlib.suppress(OSError):
            write_text_atomically(path, text)


def _cupy_pool_off() -> None:
    """CuPy allocates from its memory pool unless the allocator is unset
    (``cupy.cuda.set_allocator(None)``: every allocation is a ``cudaMalloc`` of its own)."""
    with contextlib.suppress(ImportError):
        import cupy  # type: ignore[import-not-found]

        cupy.cuda.set_allocator(None)


__all__ = [
    "OPTION",
    "TOOLS",
    "add_options",
    "find_tool",
    "is_sanitized",
    "on_planted_bug_for_tests",
    "parse_tools",
    "planted_bug",
    "sanitize_cpu_backend_for_tests",
    "sanitized_tool",
    "version_problem",
]
