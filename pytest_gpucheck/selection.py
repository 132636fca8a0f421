"""Which backends this run uses, which are unavailable and why, and on which device.

The selection is made once per process from ``--gpu-backends`` (or the ini
key) and ``--gpu-device`` and kept in the config's stash.  Backends are probed
lazily: the default selection (``numpy`` alone) imports nothing until a test
asks for a backend, so installing the plugin never slows a plain ``pytest``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any

import pytest

from pytest_gpucheck.backends import BACKENDS, GPU_BACKENDS, get_backend
from pytest_gpucheck.backends.base import Backend, Probe
from pytest_gpucheck.backends.devices import (
    DeviceSelection,
    DeviceSpecError,
    cuda_driver,
    parse_device_spec,
    select_device,
)
from pytest_gpucheck.environment import SIMULATOR_CHILD_VARIABLE
from pytest_gpucheck.options import (
    BACKENDS_INI,
    BACKENDS_OPTION,
    DEFAULT_BACKENDS,
    BackendSpec,
    check_report_path,
    parse_backend_spec,
    parse_require_spec,
)

SELECTION_KEY = pytest.StashKey["Selection"]()


class Selection:
    """The backends selected for this process and the device they run on."""

    def __init__(self, spec: BackendSpec, device_spec: str, *, explicit_option: bool) -> None:
        self.spec = spec
        self.device_spec = device_spec
        #: False when neither the option nor the ini key was given (the numpy default).
        self.explicit_option = explicit_option
        self.in_simulator_child = os.environ.get(SIMULATOR_CHILD_VARIABLE) == "1"

    @cached_property
    def device(self) -> DeviceSelection:
        """This process's CUDA device (validated in :func:`configure_selection`)."""
        return select_device(self.device_spec, cuda_driver())

    @property
    def names(self) -> tuple[str, ...]:
        """Selected backend names, available or not, in report order."""
        if self.in_simulator_child:
            return ("numba-cudasim",)
        return tuple(name for name in BACKENDS if name in self.spec.names)

    def backend(self, name: str) -> Backend:
        """The backend object ``name`` bound to this process's device."""
        index = self.device.index if name in GPU_BACKENDS else 0
        return get_backend(name, index)

    @cached_property
    def probes(self) -> dict[str, Probe]:
        """Probe every selected backend (imports their frameworks)."""
        return {name: self.backend(name).probe() for name in self.names}

    @property
    def backends(self) -> list[Backend]:
        """The selected backends that are available here."""
        return [self.backend(name) for name, probe in self.probes.items() if probe.available]

    @property
    def available_names(self) -> list[str]:
        return [name for name, probe in self.probes.items() if probe.available]

    @property
    def unavailable(self) -> dict[str, str]:
        """Selected but unavailable backends, with the reason for each."""
        return {name: probe.reason for name, probe in self.probes.items() if not probe.available}

    @property
    def child_option(self) -> str:
        """This selection as the ``--gpu-backends`` argument a child pytest process takes.

        Child processes (simulator children, MPI ranks, workers) re-create the
        selection from it; the text is the one this run was given (a group such
        as ``cpu`` stays a group, so the child reports it the same way).
        """
        return f"{BACKENDS_OPTION}={self.spec.text}"


#: Turns one selected backend into the parameters of one test (the bundled suites'
#: ``impl`` fixture expands a backend into one parameter per implementation).
#: ``skip`` holds the skip mark when the backend is unavailable here.
Expand = Callable[[str, Sequence[pytest.MarkDecorator]], list[Any]]


def marker_backends(markers: Iterable[pytest.Mark]) -> set[str] | None:
    """Backends allowed by ``gpu_backends`` and ``requires_gpu`` markers (None: all).

    Raises :class:`pytest.UsageError` for a marker naming an unknown backend.
    """
    allowed: set[str] | None = None
    for mark in markers:
        if mark.name == "gpu_backends":
            where = "@pytest.mark.gpu_backends"
            names = set(parse_backend_spec(",".join(marker_names(mark, where)), where).names)
            allowed = names if allowed is None else allowed & names
        elif mark.name == "requires_gpu":
            allowed = set(GPU_BACKENDS) if allowed is None else allowed & set(GPU_BACKENDS)
    return allowed


def marker_names(mark: pytest.Mark, where: str) -> list[str]:
    """The backend names a ``gpu_backends`` / ``gpu_xfail`` / ``gpu_skip`` marker gives, one
    per positional argument.  A list or tuple (``gpu_backends(["cpu"])``, the way
    ``parametrize`` takes its values) is a :class:`pytest.UsageError` that shows the call to
    write instead; it was a ``TypeError`` traceback from inside the plugin (exit 2)."""
    names: list[str] = []
    for arg in mark.args:
        if isinstance(arg, str):
            names.append(arg)
            continue
        if isinstance(arg, (list, tuple, set, frozenset)) and all(
                isinstance(name, str) for name in arg):
            spelled = ", ".join(repr(name) for name in arg)
            raise pytest.UsageError(
                f"{where}({arg!r}) takes the names as separate arguments, not a "
                f"{type(arg).__name__}: write {where}({spelled})")
        raise pytest.UsageError(
            f"{where}: {arg!r} is not a backend name; pass names or groups as strings, "
            f"e.g. {where}('numpy', 'cpu')")
    return names


#: The markers that expect a failure on, or skip, some backends of a test, and the
#: keywords each passes on to pytest's own ``xfail`` / ``skip`` mark.
BACKEND_OUTCOME_MARKERS: dict[str, tuple[str, ...]] = {
    "gpu_xfail": ("reason", "strict", "raises", "run"),
    "gpu_skip": ("reason",),
}


def backend_outcome_marks(item: pytest.Item) -> list[pytest.MarkDecorator]:
    """The ``xfail`` / ``skip`` marks ``gpu_xfail(...)`` / ``gpu_skip(...)`` give ``item``.

    A mark applies when the item's backend (:func:`item_backends`: ``gpu_backend``,
    a suite's ``impl``, an interop pair's producer or consumer) is one the marker
    names; names are backends or groups, as ``--gpu-backends`` takes them.  Raises
    :class:`pytest.UsageError` for an unknown name, no name or an unknown keyword,
    whether or not the item runs on a backend.
    """
    marks: list[pytest.MarkDecorator] = []
    backends: set[str] | None = None
    for mark in item.iter_markers():
        keywords = BACKEND_OUTCOME_MARKERS.get(mark.name)
        if keywords is None:
            continue
        where = f"@pytest.mark.{mark.name}"
        if not mark.args:
            raise pytest.UsageError(
                f"{where} names no backend; write e.g. {mark.name}('torch-cpu', reason='...')")
        unknown = sorted(set(mark.kwargs) - set(keywords))
        if unknown:
            raise pytest.UsageError(
                f"{where}: unknown keyword {unknown[0]!r}; it takes {', '.join(keywords)}")
        names = parse_backend_spec(",".join(marker_names(mark, where)), where).names
        if backends is None:
            backends = item_backends(item)
        hit = sorted(backends & set(names), key=list(BACKENDS).index)
        if not hit:
            continue
        reason = mark.kwargs.get("reason") or f"{mark.name} on {', '.join(hit)}"
        if mark.name == "gpu_skip":
            marks.append(pytest.mark.skip(reason=reason))
        else:
            marks.append(pytest.mark.xfail(**{**mark.kwargs, "reason": reason}))
    return marks


def _one_parameter(name: str, skip: Sequence[pytest.MarkDecorator]) -> list[Any]:
    return [pytest.param(name, id=name, marks=skip)]


def parametrize_backends(metafunc: pytest.Metafunc, argname: str,
                         expand: Expand = _one_parameter) -> None:
    """Parametrize ``argname`` over the selected backends that the test's markers allow.

    The one path from the selection and the ``gpu_backends``/``requires_gpu``
    markers to backend parameters, for the ``gpu_backend`` fixture of user tests
    and the ``impl`` fixture of the bundled suites alike.  Each parameter's value
    is (or carries, as ``.backend``) its backend name, so :func:`item_backend`
    reads an item's backend from its parameters, never from its id.  An
    unavailable backend stays visible as a skip with the probe's reason; a test
    left with no backend gets one ``no-backend`` skip saying why.
    """
    selection = get_selection(metafunc.config)
    try:
        allowed = marker_backends(metafunc.definition.iter_markers())
    except pytest.UsageError as exc:
        # Raised here it would be a collection traceback; kept for the end of collection,
        # where it stops the run as the one-line usage error it is.
        from pytest_gpucheck import usage_errors

        usage_errors.add(metafunc.config, f"{metafunc.definition.nodeid}: {exc}")
        allowed = set()
    names = [name for name in selection.names if allowed is None or name in allowed]
    params: list[Any] = []
    for name in names:
        probe = selection.probes[name]
        skip = () if probe.available else (pytest.mark.skip(reason=probe.reason),)
        params.extend(expand(name, skip))
    if not params:
        if allowed is not None:
            wanted = ", ".join(sorted(allowed, key=list(BACKENDS).index))
            reason = (f"restricted to {wanted}, none of which is selected "
                      f"({BACKENDS_OPTION}={selection.spec.text})")
        else:
            reason = "no backend selected"
        params.append(pytest.param(None, id="no-backend", marks=pytest.mark.skip(reason=reason)))
        # A parameter that is never set up: no indirect fixture is asked for it.
        metafunc.parametrize(argname, params)
        return
    metafunc.parametrize(argname, params, indirect=True)


#: The parametrizations that name backends, and how to read the names from a value:
#: the core's ``gpu_backend`` (a name), the kernel suites' ``impl`` (a registered
#: implementation's cell, or a backend name for a skipped cell), the interop suite's
#: pairs (producer and consumer), producers, and documented behaviours (their
#: trigger's producer and consumer: the exchange the item runs).  An item missing
#: here runs without its backends' ``item_scope`` (JAX's 64-bit mode) and routing.
BACKEND_PARAMETERS: dict[str, Callable[[Any], tuple[str, ...]]] = {
    "gpu_backend": lambda value: (value,),
    "impl": lambda value: (getattr(value, "backend", value),),
    "interop_pair": lambda value: (value.converter.producer, value.converter.consumer),
    "gpu_pair": lambda value: (value.converter.producer, value.converter.consumer),
    "interop_producer": lambda value: (value,),
    "documented": lambda value: ((value.trigger.producer, value.trigger.consumer)
                                 if getattr(value, "trigger", None) is not None else ()),
}


def item_backends(item: pytest.Item) -> set[str]:
    """The backends an item's parameters name (see :data:`BACKEND_PARAMETERS`).

    Read from the parameter values, never from the id text, so an id that
    happens to contain a backend's name routes nothing.
    """
    params = getattr(getattr(item, "callspec", None), "params", {})
    names: set[str] = set()
    for parameter, read in BACKEND_PARAMETERS.items():
        value = params.get(parameter)
        if value is not None:
            names.update(name for name in read(value) if isinstance(name, str))
    return names


def item_backend(item: pytest.Item) -> str | None:
    """The backend an item was parametrized on (None: not a backend parametrization).

    Read from the parameters :func:`parametrize_backends` made: the
    ``gpu_backend`` name, or the ``impl`` cell's ``backend`` (a skipped cell
    carries the name itself).
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    for argname in ("gpu_backend", "impl"):
        value = callspec.params.get(argname)
        name = getattr(value, "backend", value)
        if isinstance(name, str) and name in BACKENDS:
            return name
    return None


def get_selection(config: pytest.Config) -> Selection:
    """The selection of this pytest run (made in ``pytest_configure``)."""
    return config.stash[SELECTION_KEY]


def configure_selection(config: pytest.Config) -> Selection:
    """Parse and validate the options; raise :class:`pytest.UsageError` on bad input."""
    option_value = config.getoption("gpu_backends")
    ini_value = config.getini(BACKENDS_INI)
    # The ini key counts as a choice only when it differs from the default.
    explicit = option_value is not None or str(ini_value) != DEFAULT_BACKENDS
    text = option_value if option_value is not None else str(ini_value)
    spec = parse_backend_spec(text, BACKENDS_OPTION if option_value is not None else BACKENDS_INI)
    if not explicit and config.getoption("gpu_impls", "all") == "user":
        registered = _user_backends()
        if registered:
            # `--gpu-impls=user` alone checks the user's implementations where they
            # were registered; unavailable ones are skipped with the reason, as
            # for a group (nothing was named explicitly).
            spec = BackendSpec(registered, frozenset(),
                               f"{','.join(registered)} (the backends of your registered "
                               "implementations; --gpu-impls=user)")
            explicit = True
    check_report_path(config.getoption("gpu_report"))
    selection = Selection(spec, config.getoption("gpu_device"), explicit_option=explicit)
    try:
        if selection.device_spec.strip() != "auto":
            _ = selection.device  # an explicit index must name a visible device
        else:
            parse_device_spec(selection.device_spec)
    except DeviceSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SELECTION_KEY] = selection
    if explicit and not selection.in_simulator_child:
        for name in sorted(spec.explicit, key=list(BACKENDS).index):
            probe = selection.probes[name]
            if not probe.available:
                raise pytest.UsageError(
                    f"{BACKENDS_OPTION}: {name} is not available: {probe.reason}"
                )
    require = config.getoption("gpu_require")
    if require is not None:
        _check_required(selection, require)
    return selection


def _user_backends() -> tuple[str, ...]:
    """Backends that user implementations are registered for so far, in report order.

    Registrations from the root ``conftest.py`` and ``-p`` plugins are known
    here (they load before ``pytest_configure``); a ``conftest.py`` deeper in the
    tree loads during collection and is reported in the summary instead.
    """
    from pytest_gpucheck.registry import implementations

    names = {impl.backend for impl in implementations(origin="user")}
    return tuple(name for name in BACKENDS if name in names)


def _check_required(selection: Selection, text: str) -> None:
    """``--gpu-require``: each backend it names must be available and selected; ``gpu``
    needs a visible device, an available GPU backend and a GPU backend in the selection.

    A required backend the run does not select is a usage error, not a selection: the
    run would pass without checking it (``--gpu-require=jax-cpu`` with the default
    ``numpy`` ran nothing on jax-cpu), and adding it silently would override an explicit
    ``--gpu-backends``.  Availability is checked first: on a runner that lost its GPU the
    line names the cause.
    """
    needs_gpu, names = parse_require_spec(text)
    selected = f"{BACKENDS_OPTION}={selection.spec.text}" + (
        "" if selection.explicit_option else ", the default")
    for name in names:
        probe = selection.backend(name).probe()
        if not probe.available:
            raise pytest.UsageError(f"--gpu-require: {name} is not available: {probe.reason}")
        if name not in selection.names:
            raise pytest.UsageError(
                f"--gpu-require={text}: {name} is not selected ({selected}), so the run would "
                f"not check it; select it: {BACKENDS_OPTION}={selection.spec.text},{name}")
    if needs_gpu:
        driver = cuda_driver()
        if not driver.available:
            raise pytest.UsageError(f"--gpu-require=gpu: {driver.reason}")
        gpu_probes = {name: selection.backend(name).probe() for name in GPU_BACKENDS}
        if not any(probe.available for probe in gpu_probes.values()):
            reasons = "; ".join(f"{name}: {probe.reason}" for name, probe in gpu_probes.items())
            raise pytest.UsageError(f"--gpu-require=gpu: no GPU backend is available ({reasons})")
        if not any(gpu_probes[name].available for name in selection.names if name in gpu_probes):
            raise pytest.UsageError(
                f"--gpu-require=gpu: no available GPU backend is selected ({selected}), so the "
                f"run would check no GPU; select them: {BACKENDS_OPTION}=gpu (or all)")


def nothing_could_run(config: pytest.Config) -> str | None:
    """One line when the run selected backends and none of them could run here (a run of
    ``--gpu-backends=gpu`` on a machine without one: every backend item skipped, exit 0),
    naming ``--gpu-require`` as the way to make that an error; else None."""
    selection = get_selection(config)
    if (not selection.explicit_option or selection.in_simulator_child
            or config.getoption("gpu_require") is not None or selection.available_names):
        return None
    names = selection.names
    require = "gpu" if all(name in GPU_BACKENDS for name in names) else ",".join(names)
    return (f"gpucheck: none of {BACKENDS_OPTION}={selection.spec.text} could run here; "
            f"--gpu-require={require} makes that an error")
