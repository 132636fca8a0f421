"""PyTorch tensors on the CPU and on CUDA: DLPack both ways, CAI import on CUDA.

PyTorch has no read-only tensors, so it never produces read-only cases; as a
consumer it is checked for what it does with a read-only producer.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts
from pytest_gpucheck.backends.dtypes import numpy_dtype


def _torch() -> Any:
    import torch

    return torch


def torch_dtype(dtype: np.dtype) -> Any:
    """The torch dtype of a NumPy dtype (bfloat16 included)."""
    return getattr(_torch(), np.dtype(dtype).name)


def host_tensor(host: np.ndarray) -> Any:
    """A CPU tensor viewing ``host`` (NumPy cannot hand torch its ml_dtypes bfloat16)."""
    torch = _torch()
    if host.dtype.name == "bfloat16":
        # The bits go through int16, which every torch converts: before torch 2.3,
        # from_numpy refused uint16 (TypeError: can't convert np.ndarray of type
        # numpy.uint16).
        return torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(host)


class TorchAdapter(Adapter):
    """``torch.Tensor`` on the backend's device (``cpu`` or ``cuda:N``)."""

    readonly = "never"

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.name = backend.name  # type: ignore[misc]  # torch-cpu or torch-cuda

    @property
    def device(self) -> str:
        return str(self.backend.device_string)

    def dtype_problem(self, dtype_name: str) -> str | None:
        problem = super().dtype_problem(dtype_name)
        if problem is None and not hasattr(_torch(), dtype_name):
            problem = f"torch has no {dtype_name} dtype"
        return problem

    def upload(self, host: np.ndarray) -> Any:
        torch = _torch()
        itemsize = host.dtype.itemsize
        tensor = torch.empty_strided(
            host.shape,
            tuple(s // itemsize for s in host.strides),
            dtype=torch_dtype(host.dtype),
            device=self.device,
        )
        tensor.copy_(host_tensor(host))
        return tensor

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        torch = _torch()
        if copy is not None and "copy" not in inspect.signature(torch.from_dlpack).parameters:
            raise NotAvailable(f"torch {torch.__version__}: from_dlpack takes no copy argument")

        def import_dlpack(obj: Any) -> Any:
            if copy is None:
                return torch.from_dlpack(obj)
            return torch.from_dlpack(obj, copy=copy)

        return import_dlpack

    def cai_importer(self) -> Callable[[Any], Any]:
        if not self.device.startswith("cuda"):
            return super().cai_importer()
        torch = _torch()
        device = self.device

        def import_cai(obj: Any) -> Any:
            # Documented zero-copy path: torch.as_tensor reads __cuda_array_interface__.
            return torch.as_tensor(obj, device=device)

        return import_cai

    def owns(self, array: Any) -> bool:
        return isinstance(array, _torch().Tensor)

    def facts(self, array: Any) -> ArrayFacts:
        itemsize = array.element_size()
        device = array.device
        return ArrayFacts(
            pointer=int(array.data_ptr()),
            shape=tuple(array.shape),
            strides=tuple(int(s) * itemsize for s in array.stride()),
            dtype=numpy_dtype(str(array.dtype).removeprefix("torch.")),
            device="cpu" if device.type == "cpu" else f"cuda:{device.index}",
            readonly=False,
        )

    def to_host(self, array: Any) -> np.ndarray:
        torch = _torch()
        self.synchronize()
        tensor = array.detach().cpu()
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).numpy().view(numpy_dtype("bfloat16")).copy()
        return tensor.numpy().copy()

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array[index] = host_tensor(np.asarray(value).reshape(())).to(array.device)
        self.synchronize()

    # Stream hooks: CUDA tensors only (a CPU tensor has no streams).
    @property
    def queues_pending_fill(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def has_stream_copy(self) -> bool:
        return self.device.startswith("cuda")

    @contextlib.contextmanager
    def _pending_fill(self, value: float, elements: int, spin_cycles: int) -> Iterator[Any]:
        torch = _torch()
        device = torch.device(self.device)
        array = torch.zeros(elements, dtype=torch.float32, device=device)
        torch.cuda.synchronize(device)
        side = torch.cuda.Stream(device=device)
        with torch.cuda.stream(side):
            torch.cuda._sleep(spin_cycles)  # the spin kernel PyTorch's own stream tests use
            array.fill_(value)
            yield array  # the import happens while the side stream is current

    def pending_fill(self, value: float, elements: int,
                     spin_cycles: int) -> contextlib.AbstractContextManager[Any]:
        if not self.queues_pending_fill:
            return super().pending_fill(value, elements, spin_cycles)
        return self._pending_fill(value, elements, spin_cycles)

    def stream_copy(self, array: Any) -> Any:
        if not self.has_stream_copy:
            return super().stream_copy(array)
        return array.clone()
