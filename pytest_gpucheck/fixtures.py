"""The fixtures users put in their tests: ``gpu_backend``, ``xp`` and ``gpu_device``; and
whose fixture an item gets (:func:`gets_plugin_fixture`).

A project that merely has the plugin installed may define a fixture named ``mpi_comm``
(or ``gpu_device``) of its own; pytest gives its tests the project's fixture, and the
plugin must not take those tests for its own (its end-of-run output, its MPI rank
session).  A fixture of the project's that requests the plugin's under the same name
(pytest's way of extending a fixture) still gets the plugin's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest

# Imported inside the fixtures: loading the plugin must stay cheap.
if TYPE_CHECKING:
    from pytest_gpucheck.backends.base import Backend
    from pytest_gpucheck.backends.devices import CudaDevice, DeviceSelection


@pytest.fixture
def gpu_backend(request: pytest.FixtureRequest) -> Backend:
    """The backend this test runs on, one test item per selected backend.

    Parametrized by ``--gpu-backends`` (ids like ``[numba-cpu]``); restricted
    by the ``gpu_backends(...)`` and ``requires_gpu`` markers (and marked
    expected to fail or skipped on some by ``gpu_xfail(...)`` / ``gpu_skip(...)``).
    The object has ``name``, ``tier``, ``xp`` (the array API namespace), ``module``
    (the framework's own module), ``to_device(host)``, ``to_host(array)``,
    ``empty(shape, dtype)``, ``full(...)``, ``synchronize()``,
    ``describe_device()`` and ``version()``.

    ``gpu_backend.xp`` is the array API namespace, or None on the backends whose
    device arrays have none (``numba-cudasim``, ``numba-cuda``,
    ``cuda-python``): code that calls array functions requests the ``xp``
    fixture instead, which skips those backends with a one-line reason.
    """
    from pytest_gpucheck.selection import get_selection

    name = getattr(request, "param", None)
    if name is None:
        pytest.skip("no backend selected for this test")
    backend = get_selection(request.config).backend(name)
    backend.require()
    return backend


@pytest.fixture
def xp(gpu_backend: Backend) -> Any:
    """The Python array API namespace of ``gpu_backend``'s arrays, one item per backend.

    What ``array_api_compat.array_namespace(x)`` gives for an array ``x`` of the
    backend, as array-api-tests, SciPy, scikit-learn and array-api-extra use it:
    ``array_api_compat.numpy`` (``numpy``, ``numba-cpu``), ``array_api_compat.torch``
    (``torch-cpu``, ``torch-cuda``), ``array_api_compat.cupy``, ``jax.numpy`` and
    ``array_api_strict``; on ``torch-cuda``, ``cupy`` and ``jax-*`` that namespace wrapped
    so that its creation functions (``xp.ones``, ``xp.asarray([1.0])``...) place arrays on
    the backend's device when the test names none.  The standard's names work on every
    one::

        def test_transpose(xp):
            assert xp.permute_dims(xp.ones((2, 3)), (1, 0)).shape == (3, 2)

    Use ``gpu_backend.module`` for what the standard does not name (the bare
    ``torch``, ``numpy``, ``cupy`` or ``jax.numpy``: ``torch.compile``,
    ``numpy.ascontiguousarray``), and ``gpu_backend.to_device`` / ``to_host`` to move
    NumPy arrays.  Numba's CUDA targets (``numba-cuda``, ``numba-cudasim``) and
    cuda-python have no array namespace: tests that use ``xp`` are skipped there,
    with the reason ``<backend> has no array namespace (xp); use gpu_backend
    instead``.  A project whose ``conftest.py`` defines its own ``xp`` fixture keeps
    it: pytest prefers the nearer definition (``pytest --fixtures`` shows both).  A
    test that asks for ``xp`` where the project defines none gets this one, on purpose
    (the name the array API world and these docs give the namespace; the node id's
    ``[numpy]`` shows it), not "fixture 'xp' not found": docs/getting-started.md.
    """
    from pytest_gpucheck.backends.base import BackendUnavailable

    try:
        namespace = gpu_backend.xp
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    if namespace is None:
        pytest.skip(f"{gpu_backend.name} has no array namespace (xp); use gpu_backend instead")
    return namespace


class GpuDevice:
    """This process's CUDA device: the index, how it was chosen, and what it is."""

    def __init__(self, selection: DeviceSelection, device: CudaDevice | None, reason: str) -> None:
        self.index = selection.index
        self.how = selection.how
        self.oversubscribed = selection.oversubscribed
        self.info = device
        self.reason = reason

    @property
    def available(self) -> bool:
        return self.info is not None

    def __repr__(self) -> str:
        what = self.info.describe() if self.info else f"unavailable: {self.reason}"
        return f"<GpuDevice {self.index} ({self.how}): {what}>"


@pytest.fixture(scope="session")
def gpu_device(pytestconfig: pytest.Config) -> GpuDevice:
    """The CUDA device this process uses (``--gpu-device``, MPI local rank, xdist worker).

    ``index`` is within ``CUDA_VISIBLE_DEVICES``; ``info`` has the name, compute
    capability and memory, or is None with ``reason`` when no device is visible.
    """
    from pytest_gpucheck.backends.devices import cuda_driver
    from pytest_gpucheck.selection import get_selection

    selection = get_selection(pytestconfig).device
    driver = cuda_driver()
    device = driver.devices[selection.index] if driver.available else None
    return GpuDevice(selection, device, driver.reason)


#: The package whose fixtures are the plugin's.
PLUGIN_PACKAGE = "pytest_gpucheck"


def _is_plugins(definition: Any) -> bool:
    module = str(getattr(getattr(definition, "func", None), "__module__", "") or "")
    return module == PLUGIN_PACKAGE or module.startswith(PLUGIN_PACKAGE + ".")


def gets_plugin_fixture(item: pytest.Item, names: Iterable[str]) -> bool:
    """Whether ``item`` gets one of ``names`` from the plugin (directly or through a
    fixture of the project that extends the plugin's under the same name)."""
    wanted = set(names).intersection(getattr(item, "fixturenames", ()))
    if not wanted:
        return False
    # pytest's resolved definitions of the item's fixtures, the closest one last.
    info = getattr(item, "_fixtureinfo", None)
    resolved = getattr(info, "name2fixturedefs", None)
    if resolved is None:
        return True  # an item of another kind: the name is all there is to go by
    for name in wanted:
        for definition in reversed(resolved.get(name, ())):
            if _is_plugins(definition):
                return True
            if name not in getattr(definition, "argnames", ()):
                break  # the project's own, which does not extend the plugin's
    return False
