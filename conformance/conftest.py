"""Parametrization of the conformance suites: selected backends x registered implementations.

Every test that requests the ``impl`` fixture and carries
``@pytest.mark.gpu_kernel("<kernel>")`` runs once per implementation of that
kernel on each selected backend, with the id ``backend:name``
(``numba-cudasim:bundled``).  Cells that cannot run stay visible as skips with
their reason: a backend that is unavailable here, a backend that cannot
express the kernel (``not_applicable``), or no implementation registered.
``--gpu-impls=all|bundled|user`` chooses which implementations count.
"""

from __future__ import annotations

# Absolute imports only: in a checkout pytest imports this file by its path, as a
# module of a package named after the folder, and a relative import would load a
# second copy of the harness beside the `pytest_gpucheck.conformance.harness` the
# plugin uses.
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_gpucheck.checking import hypothesis_profiles
from pytest_gpucheck.conformance.harness import Cell
from pytest_gpucheck.conformance.specs import spec_for
from pytest_gpucheck.registry import implementations, load_bundled, not_applicable_reason
from pytest_gpucheck.reporting.report import add_section, set_cell
from pytest_gpucheck.selection import get_selection, item_backend, parametrize_backends

# Direct `pytest conformance/` without the feature plugin still needs the profiles.
hypothesis_profiles.register_profiles()


@pytest.fixture
def impl(request: pytest.FixtureRequest) -> Cell:
    """The implementation under test and the backend it runs on (``backend:name``)."""
    cell: Cell = request.param
    return cell


def _kernel_of(metafunc: pytest.Metafunc) -> str:
    marker = metafunc.definition.get_closest_marker("gpu_kernel")
    if marker is None or not marker.args:
        pytest.fail(
            f"{metafunc.definition.nodeid} requests `impl` but has no "
            "@pytest.mark.gpu_kernel('<kernel>'); add the marker naming the kernel",
            pytrace=False,
        )
    kernel = str(marker.args[0])
    try:
        spec_for(kernel)
    except KeyError as exc:  # one line naming the known kernels
        pytest.fail(f"{metafunc.definition.nodeid}: {exc.args[0]}", pytrace=False)
    return kernel


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "impl" not in metafunc.fixturenames:
        return
    kernel = _kernel_of(metafunc)
    origin = metafunc.config.getoption("gpu_impls", "all")

    def cells(name: str, skip: Sequence[pytest.MarkDecorator]) -> list[Any]:
        """One parameter per implementation of ``kernel`` on backend ``name``, or one skip."""
        found = implementations(kernel=kernel, backend=name,
                                origin=None if origin == "all" else origin)
        if found:
            return [pytest.param(Cell(name, impl), id=impl.id, marks=skip)
                    for impl in sorted(found, key=lambda i: (i.origin != "bundled", i.name))]
        reason = not_applicable_reason(kernel, name)
        if skip:
            # The real reason comes first: nothing could run here anyway.
            return [pytest.param(name, id=f"{name}:none", marks=skip)]
        if reason is not None and origin != "user":
            return [pytest.param(name, id=f"{name}:not-applicable",
                                 marks=pytest.mark.skip(reason=f"not applicable: {reason}"))]
        which = {"all": "", "bundled": "bundled ", "user": "user "}[origin]
        return [pytest.param(
            name, id=f"{name}:none",
            marks=pytest.mark.skip(reason=f"no {which}implementation of {kernel} "
                                          f"registered for {name} (--gpu-impls={origin})"))]

    parametrize_backends(metafunc, "impl", cells)


SUITES = Path(__file__).parent


def _exercises_no_user_code(item: pytest.Item, user_kernels: set[str]) -> bool:
    """Under ``--gpu-impls=user``: is ``item`` a bundled-suite item that runs none of
    the user's implementations?  The interop and MPI suites exercise the frameworks
    and the plugin, never a registered kernel; a kernel suite exercises user code
    only for kernels the user registered (on any backend)."""
    if SUITES not in item.path.parents:
        return False
    fixtures = getattr(item, "fixturenames", ())
    if "gpu_benchmark" in fixtures:
        return False  # bench_kernels times the user's implementation under --gpu-impls=user
    callspec = getattr(item, "callspec", None)
    kernel = callspec.params.get("kernel") if callspec is not None else None
    if "impl" not in fixtures and isinstance(kernel, str):
        return kernel not in user_kernels  # jit vs eager: every implementation of `kernel`
    marker = item.get_closest_marker("gpu_kernel")
    if "impl" not in fixtures or marker is None:
        return True
    return str(marker.args[0]) not in user_kernels


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("gpu_impls", "all") == "user":
        user_kernels = {impl.kernel for impl in implementations(origin="user")}
        deselected = [item for item in items if _exercises_no_user_code(item, user_kernels)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            kept = set(map(id, items)) - set(map(id, deselected))
            items[:] = [item for item in items if id(item) in kept]
    for item in items:
        marker = item.get_closest_marker("gpu_kernel")
        callspec = getattr(item, "callspec", None)
        if marker is None or callspec is None or "impl" not in callspec.params:
            continue
        backend = item_backend(item)
        if backend is not None:
            set_cell(item, backend=backend, family=spec_for(str(marker.args[0])).family)


class ConformanceNotes:
    """Reports what the suites record per test besides pass/fail.

    * the XLA compilations each JAX test made (JAX compiles once per distinct
      input shape and dtype; the size buckets of :mod:`pytest_gpucheck.checking.strategies`
      bound that number per test);
    * the backends on which guard bands could not apply (immutable arrays), so
      that cell of the matrix is known to rest on the other checks only.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.compilations: dict[str, int] = {}
        self.no_guards: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == "jax_compilations":
                self.compilations[report.nodeid] = int(str(value))
            elif key == "guard_bands":
                backend = str(getattr(report, "gpucheck_cell", {}).get("backend", "?"))
                self.no_guards[backend] = str(value)

    def pytest_sessionfinish(self) -> None:
        self._report_unselected()
        for backend, note in sorted(self.no_guards.items()):
            line = f"gpucheck: guard bands on {backend}: {note}"
            add_section(self.config, f"guard_bands:{backend}", {"backend": backend, "note": note},
                        f"Guard bands on {backend}: {note}\n", [line])
        if not self.compilations:
            return
        counts = self.compilations
        worst = max(counts, key=lambda nodeid: counts[nodeid])
        line = (f"gpucheck: JAX compilations per conformance test: at most "
                f"{counts[worst]} ({worst.rsplit('::', 1)[-1]}), {sum(counts.values())} over "
                f"{len(counts)} tests")
        add_section(self.config, "jax_compilations", dict(sorted(counts.items())),
                    f"{line.removeprefix('gpucheck: ')}\n", [line])


    def _report_unselected(self) -> None:
        """Name the user implementations this run did not check, and the option that would."""
        selection = get_selection(self.config)
        if selection.in_simulator_child or self.config.getoption("gpu_impls", "all") == "bundled":
            return
        # --gpu-impls=user with nothing registered stopped the run when the session started
        # (a usage error, pytest_gpucheck.plugin).
        mine = implementations(origin="user")
        missed: dict[str, list[str]] = {}
        for found in mine:
            if found.backend not in selection.names:
                missed.setdefault(found.backend, []).append(f"{found.kernel}:{found.name}")
        if not missed:
            return
        wanted = ",".join(dict.fromkeys((*selection.names, *missed)))
        lines = [f"gpucheck: not checked: your {', '.join(sorted(kernels))} on {backend} "
                 f"({backend} is not selected)" for backend, kernels in sorted(missed.items())]
        lines.append(f"gpucheck: to check them too, run with --gpu-backends={wanted}")
        add_section(self.config, "user_implementations",
                    {"not_selected": {b: sorted(k) for b, k in missed.items()}},
                    "\n".join(line.removeprefix("gpucheck: ") for line in lines) + "\n", lines)


def pytest_configure(config: pytest.Config) -> None:
    # Implementations registered through entry points load now, so a broken
    # third-party package stops the run in one line before collection.  (The rerun
    # lines of every process come from the user's command, which the plugin hands
    # down to its children: pytest_gpucheck.reporting.ci.rerun_invocation.)
    load_bundled()
    _quiet_framework_internals(config)
    if not config.pluginmanager.has_plugin("gpucheck-conformance-notes"):
        config.pluginmanager.register(ConformanceNotes(config), "gpucheck-conformance-notes")


#: Warnings the frameworks raise from their own code while the bundled implementations run
#: on the CUDA simulator (NOT the implementations' or a user's code): each with its reason.
#: A user's first run of the suites showed 21 of them (they come from the simulator child,
#: whose warnings now reach the summary).
_FRAMEWORK_WARNINGS = (
    # numba-cuda's simulator jits its random-state initialisation with nopython=False,
    # which numba >= 0.59 deprecates; nothing a user can change.
    "ignore:The keyword argument 'nopython=False' was supplied"
    ":numba.core.errors.NumbaDeprecationWarning",
    # ... and that initialisation then falls back to object mode on the host.
    "ignore:\\s*Compilation is falling back to object mode:numba.core.errors.NumbaWarning",
    # xoroshiro128+ relies on 64-bit wraparound, which NumPy scalars (the simulator's
    # arithmetic) report as overflow; on a GPU the same code wraps silently, as meant.
    "ignore:overflow encountered in scalar:RuntimeWarning:"
    "(numba\\.cuda\\.random|pytest_gpucheck\\.conformance\\.implementations\\._numba_cuda_kernels)",
)


def _quiet_framework_internals(config: pytest.Config) -> None:
    """Filter :data:`_FRAMEWORK_WARNINGS` (only where numba is installed: a filter's
    category must import)."""
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return
    for line in _FRAMEWORK_WARNINGS:
        config.addinivalue_line("filterwarnings", line)
