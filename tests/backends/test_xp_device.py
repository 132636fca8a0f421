"""``xp`` creates arrays on its backend's device, on every GPU backend.

The array API's creation functions (``xp.ones``, ``xp.asarray([1.0])``) place arrays on
the namespace's default device when no ``device=`` is given.  On ``torch-cuda`` the
namespace was array-api-compat's torch wrapper, one object with ``torch-cpu``'s, whose
``ones`` passes ``device=None``: torch's default device, the CPU, so a user's ``xp`` test
under ``torch-cuda`` ran on the CPU, green.  CuPy creates on its current device and JAX
on ``jax_default_device``, process-wide settings that need not be the backend's.

No GPU here: each framework's own rule is rebuilt on a device that is not its default.
PyTorch's ``meta`` device stands in for ``cuda:0`` (a ``torch-cuda`` backend whose device
string is ``meta``, the real namespace and torch underneath); JAX gets two host devices
and a backend on the second (a subprocess: the device count is fixed at JAX's start);
CuPy is a stand-in with CuPy's and array-api-compat's rules (a current device set by
``with cupy.cuda.Device(i)``; ``ones`` ignoring ``device=``, ``fft.fftfreq`` refusing
it), since CuPy cannot be imported without CUDA.
"""

from __future__ import annotations

import sys
import textwrap
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from user_runs import REPO, run_command

from pytest_gpucheck.backends.cupy.backend import CupyBackend


def test_torch_cuda_xp_creates_on_the_backends_device() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from pytest_gpucheck.backends.torch.backend import TorchCpuBackend, TorchCudaBackend

    class OnMeta(TorchCudaBackend):
        """torch-cuda whose device is ``meta``, not torch's default (the CPU)."""

        @property
        def device_string(self) -> str:
            return "meta"

    xp = OnMeta().xp
    made = {"ones": xp.ones(3), "zeros": xp.zeros((2, 2)), "empty": xp.empty(2),
            "full": xp.full(2, 1.5), "arange": xp.arange(4), "eye": xp.eye(2),
            "linspace": xp.linspace(0, 1, 5), "asarray of a list": xp.asarray([1.0, 2.0]),
            "fft.fftfreq": xp.fft.fftfreq(4), "fft.rfftfreq": xp.fft.rfftfreq(4)}
    elsewhere = {name: str(array.device) for name, array in made.items()
                 if array.device.type != "meta"}
    assert elsewhere == {}, f"xp on torch-cuda created arrays elsewhere: {elsewhere}"
    # What the standard leaves to the input or the caller stays theirs.
    host = torch.zeros(2)
    assert xp.asarray(host).device.type == "cpu"
    assert xp.zeros_like(host).device.type == "cpu"
    assert xp.ones(2, device="cpu").device.type == "cpu"
    # Everything else is the namespace's own; torch-cpu keeps the bare compat module.
    assert xp.permute_dims(xp.ones((2, 3)), (1, 0)).shape == (3, 2)
    assert xp.__array_api_version__ == TorchCpuBackend().xp.__array_api_version__
    assert xp is not TorchCpuBackend().xp


class FakeCupy:
    """CuPy's placement rule: arrays go to the current device, which
    ``with cupy.cuda.Device(i)`` sets and puts back."""

    def __init__(self) -> None:
        self.current = 0
        fake = self

        class Device:
            def __init__(self, index: int | None = None) -> None:
                self.id = fake.current if index is None else index

            def __enter__(self) -> Device:
                self.before = fake.current
                fake.current = self.id
                return self

            def __exit__(self, *exc: object) -> None:
                fake.current = self.before

        self.cuda = types.SimpleNamespace(Device=Device)


class Array:
    def __init__(self, device: int) -> None:
        self.device = device


def compat_namespace(cupy: FakeCupy) -> Any:
    """array-api-compat's CuPy wrapper as far as placement goes: ``ones`` and the like
    validate ``device=`` for NumPy and Dask only and create on the current device;
    ``asarray`` enters ``cupy.cuda.Device(device)``; ``fft.fftfreq`` refuses a device."""

    def create(*args: Any, device: Any = None, **kwargs: Any) -> Array:
        return Array(cupy.current)

    def asarray(obj: Any, /, *, device: Any = None, **kwargs: Any) -> Array:
        with cupy.cuda.Device(device):
            return obj if isinstance(obj, Array) else Array(cupy.current)

    def fftfreq(n: int, /, *, d: float = 1.0, device: Any = None) -> Array:
        if device not in ("cpu", None):
            raise ValueError(f"Unsupported device {device!r}")
        return Array(cupy.current)

    return types.SimpleNamespace(
        **{name: create for name in ("ones", "zeros", "empty", "full", "arange", "eye",
                                     "linspace")},
        asarray=asarray, fft=types.SimpleNamespace(fftfreq=fftfreq, rfftfreq=fftfreq),
        __array_api_version__="2024.12")


@contextmanager
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeCupy, Any]]:
    cupy = FakeCupy()
    namespace = compat_namespace(cupy)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(CupyBackend, "module", property(lambda self: cupy))
    monkeypatch.setattr(CupyBackend, "_array_namespace", lambda self: namespace)
    yield cupy, namespace


def test_cupy_xp_creates_on_the_backends_device(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_cupy(monkeypatch) as (cupy, _):
        xp = CupyBackend(1).xp  # device 1; CuPy's current device is 0
        made = {"ones": xp.ones(3), "zeros": xp.zeros(3), "full": xp.full(3, 1.0),
                "arange": xp.arange(3), "asarray of a list": xp.asarray([1.0]),
                "fft.fftfreq": xp.fft.fftfreq(4)}
        elsewhere = {name: array.device for name, array in made.items() if array.device != 1}
        assert elsewhere == {}, f"xp on cupy device 1 created arrays elsewhere: {elsewhere}"
        assert cupy.current == 0  # the user's current device is put back
        assert xp.asarray(Array(0)).device == 0  # an array keeps its device


JAX_ON_SECOND_DEVICE = textwrap.dedent('''
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax
    from pytest_gpucheck.backends.jax.backend import JaxCpuBackend

    class Second(JaxCpuBackend):
        """A JAX backend whose device is not jax's default (as jax-gpu on device 1)."""

        def _device(self):
            return self._jax().devices("cpu")[1]

    xp = Second().xp
    want = jax.devices("cpu")[1]
    made = {"ones": xp.ones(3), "zeros": xp.zeros(3), "full": xp.full(3, 1.0),
            "arange": xp.arange(3), "linspace": xp.linspace(0, 1, 3), "eye": xp.eye(2),
            "asarray of a list": xp.asarray([1.0]), "fft.fftfreq": xp.fft.fftfreq(4)}
    elsewhere = {name: str(a.devices()) for name, a in made.items() if a.devices() != {want}}
    assert elsewhere == {}, f"xp on JAX device 1 created arrays elsewhere: {elsewhere}"
    first = jax.device_put(jax.numpy.ones(2), jax.devices("cpu")[0])
    assert xp.asarray(first).devices() == {jax.devices("cpu")[0]}
    print("ok")
''')


@pytest.mark.slow
def test_jax_xp_creates_on_the_backends_device() -> None:
    pytest.importorskip("jax")
    done = run_command([sys.executable, "-c", JAX_ON_SECOND_DEVICE], REPO, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok"), done.stdout[-2000:]
