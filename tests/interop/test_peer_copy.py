"""The peer-copy check of the multi-device suite, driven through the real CuPy and torch
adapters by fake two-device framework modules (no GPU here): the documented copy passes,
and the copies people get wrong are rejected with the check's message."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from user_runs import assert_outcomes, run_pytest

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.backends.cupy.peer_copy import CupyPeerCopy
from pytest_gpucheck.backends.torch.peer_copy import TorchPeerCopy
from pytest_gpucheck.conformance.implementations.peer_copy_impls import SAMPLES, check_peer_copy


class FakeDeviceArray:
    """An array on one device of a fake framework: host data and a device number."""

    def __init__(self, data: np.ndarray, device: int) -> None:
        self.data = data
        self.device_id = device

    @property
    def device(self) -> Any:  # CuPy: ndarray.device.id
        return SimpleNamespace(id=self.device_id)

    def fill(self, value: Any) -> None:
        self.data[...] = value


def fake_cupy(devices: int = 2, peer: bool = True) -> Any:
    """CuPy's semantics, as its source states them: ``asarray`` of an array on the current
    device returns it; of an array on another device, a copy on the current device."""
    current = [0]

    @contextlib.contextmanager
    def device(index: int) -> Iterator[None]:
        previous, current[0] = current[0], index
        try:
            yield
        finally:
            current[0] = previous

    def asarray(obj: Any) -> FakeDeviceArray:
        if isinstance(obj, FakeDeviceArray):
            if obj.device_id == current[0]:
                return obj
            return FakeDeviceArray(obj.data.copy(), current[0])
        return FakeDeviceArray(np.array(obj), current[0])

    runtime = SimpleNamespace(getDeviceCount=lambda: devices,
                              deviceCanAccessPeer=lambda d, p: int(peer and d != p))
    return SimpleNamespace(cuda=SimpleNamespace(Device=device, runtime=runtime),
                           asarray=asarray, asnumpy=lambda a: a.data.copy())


class FakeTensor(FakeDeviceArray):
    """torch semantics: ``to`` another device copies, to its own device returns self;
    ``clone`` copies on the tensor's own device."""

    @property
    def device(self) -> Any:  # torch: tensor.device.type / .index
        return SimpleNamespace(type="cuda", index=self.device_id)

    def to(self, target: str) -> FakeTensor:
        index = int(target.split(":")[1])
        return self if index == self.device_id else FakeTensor(self.data.copy(), index)

    def clone(self) -> FakeTensor:
        return FakeTensor(self.data.copy(), self.device_id)

    def zero_(self) -> FakeTensor:
        self.data[...] = 0
        return self

    def cpu(self) -> Any:
        return SimpleNamespace(numpy=lambda: self.data.copy())


def fake_torch(devices: int = 2, peer: bool = False) -> Any:
    def as_tensor(host: np.ndarray, device: str) -> FakeTensor:
        return FakeTensor(np.array(host), int(device.split(":")[1]))

    cuda = SimpleNamespace(device_count=lambda: devices,
                           can_device_access_peer=lambda d, p: peer and d != p,
                           device=lambda index: contextlib.nullcontext())
    return SimpleNamespace(as_tensor=as_tensor, cuda=cuda)


# -- the copies people get wrong ------------------------------------------------------------------
class CupyWithoutTheDevice(CupyPeerCopy):
    """Forgets ``with cupy.cuda.Device(target)``: ``asarray`` returns the source itself."""

    def copy_to(self, array: Any, device: int) -> Any:
        return self.cupy.asarray(array)


class TorchCloneUnderDevice(TorchPeerCopy):
    """Expects ``torch.cuda.device(1)`` to move a ``clone``: it stays on device 0."""

    def copy_to(self, array: Any, device: int) -> Any:
        with self.torch.cuda.device(device):
            return array.clone()


class CupyViewNotCopy(CupyPeerCopy):
    """Hands back a new array object on the target that shares the source's memory."""

    def copy_to(self, array: Any, device: int) -> Any:
        return FakeDeviceArray(array.data, device)


class CupyPartialCopy(CupyPeerCopy):
    """Copies only the first row of a 2-D array (a byte count computed per row)."""

    def copy_to(self, array: Any, device: int) -> Any:
        data = np.zeros_like(array.data)
        data[:1] = array.data[:1]
        return FakeDeviceArray(data, device)


CORRECT = [pytest.param(CupyPeerCopy(fake_cupy(peer=True)), True, id="cupy-peer"),
           pytest.param(CupyPeerCopy(fake_cupy(peer=False)), False, id="cupy-no-peer"),
           pytest.param(TorchPeerCopy(fake_torch(peer=False)), False, id="torch-no-peer"),
           pytest.param(TorchPeerCopy(fake_torch(peer=True)), True, id="torch-peer")]


@pytest.mark.parametrize(("ops", "peer"), CORRECT)
def test_the_documented_copy_passes_and_peer_access_is_recorded(ops: Any, peer: bool) -> None:
    for host in SAMPLES:
        result = check_peer_copy(ops, host, 0, 1)
        assert result.problems == []
        assert result.peer_access is peer


BROKEN = [
    pytest.param(CupyWithoutTheDevice(fake_cupy()),
                 "the copy of float32[5, 7] is on device 0, but should be on device 1",
                 id="cupy-without-device"),
    pytest.param(CupyWithoutTheDevice(fake_cupy()), "is the source array itself",
                 id="cupy-without-device-same-object"),
    pytest.param(TorchCloneUnderDevice(fake_torch()),
                 "the copy of float32[5, 7] is on device 0, but should be on device 1",
                 id="torch-clone"),
    pytest.param(CupyViewNotCopy(fake_cupy()),
                 "the source of float32[5, 7] on device 0 changed (after the copy was "
                 "overwritten: the two share memory)", id="cupy-shared-memory"),
    pytest.param(CupyPartialCopy(fake_cupy()),
                 "the copy of float32[5, 7] differs from the source in 28 of 35 elements",
                 id="cupy-partial"),
]


@pytest.mark.parametrize(("ops", "message"), BROKEN)
def test_a_wrong_copy_is_rejected_with_the_checks_message(ops: Any, message: str) -> None:
    problems = check_peer_copy(ops, SAMPLES[0], 0, 1).problems
    assert any(message in problem for problem in problems), problems


@pytest.mark.slow
def test_the_suite_collects_it_for_cupy_and_torch_in_the_multi_device_row(
        pytester: pytest.Pytester) -> None:
    """Without a GPU both cells are skipped with the backend's reason, in the
    multi-device row (with one GPU: ``needs 2 devices``, from ``skip_unless_devices``)."""
    import json

    from pytest_gpucheck import conformance

    suites = Path(conformance.__file__).parent
    result = run_pytest(
        pytester.path, str(suites / "test_multi_device.py"), "--rootdir", str(pytester.path),
        "--gpu-backends=gpu", "-k", "test_peer_copy", "--gpu-report=report.json",
        timeout=600)
    assert_outcomes(result.stdout, skipped=2)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cells = {(c["family"], c["backend"]): c["status"] for c in report["cells"]}
    assert cells == {("multi-device", "cupy"): "skip", ("multi-device", "torch-cuda"): "skip"}


def test_each_gpu_backend_with_a_documented_peer_copy_hands_out_its_own() -> None:
    """The suite asks the backend (``Backend.peer_copy``), never a table of names: CuPy and
    torch-cuda return their adapters; every other backend has none, so the test is not
    parametrized over it."""
    from pytest_gpucheck.backends import BACKENDS

    kinds = {name: type(get_backend(name).peer_copy()) for name in BACKENDS}
    assert kinds.pop("cupy") is CupyPeerCopy
    assert kinds.pop("torch-cuda") is TorchPeerCopy
    assert set(kinds.values()) == {type(None)}
