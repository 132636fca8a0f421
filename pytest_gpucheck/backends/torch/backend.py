"""PyTorch on the CPU and on a CUDA device.

Also PyTorch's CUDA event timer (:class:`TorchEventTimer`) and its MPI array
operations (:class:`TorchOps`); the interop adapter is in :mod:`.adapter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import build_mismatch, device_line, unready
from pytest_gpucheck.backends.array_ops import ArrayOps, Index
from pytest_gpucheck.backends.base import Backend, PeerCopy, Probe
from pytest_gpucheck.backends.timing import CudaEventTimer

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.timing import RoundTimer


class _TorchBackend(Backend):
    distribution = "torch"

    def _device(self) -> Any:
        import torch

        return torch.device(self.device_string)

    @property
    def device_string(self) -> str:
        return "cpu"

    @property
    def module(self) -> Any:
        import torch

        return torch

    def to_device(self, host: np.ndarray) -> Any:
        import torch

        return torch.from_numpy(np.array(host, copy=True)).to(self._device())

    def to_host(self, array: Any) -> np.ndarray:
        return array.detach().cpu().numpy().copy()

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        import torch

        torch_dtype = torch.from_numpy(np.empty(0, dtype=dtype)).dtype
        return torch.empty(shape, dtype=torch_dtype, device=self._device())

    def copy(self, src: Any, dst: Any) -> Any:
        return dst.copy_(src)

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.torch.adapter import TorchAdapter

        return TorchAdapter(self)

    def mpi_ops(self) -> ArrayOps:
        return TorchOps(self)


class TorchCpuBackend(_TorchBackend):
    """PyTorch tensors on the CPU."""

    name = "torch-cpu"
    tier = "cpu"
    single_threaded_in_one_thread_pools = True
    install_hint = "pip install 'pytest-gpucheck[cpu]'"

    def _probe(self) -> Probe:
        torch = self._import("torch")
        return Probe(True, version=torch.__version__, device="cpu")


class TorchCudaBackend(_TorchBackend):
    """PyTorch tensors on a CUDA device."""

    name = "torch-cuda"
    tier = "gpu"
    install_hint = "a CUDA build of torch (pip install torch)"

    @property
    def device_string(self) -> str:
        return f"cuda:{self.device_index}"

    def _probe(self) -> Probe:
        problem = unready("torch", f"torch is not installed; install {self.install_hint}")
        if problem:
            return Probe.missing(problem)
        torch = self._import("torch")
        if torch.version.cuda is None:
            return Probe.missing(
                f"torch {torch.__version__} is a CPU-only build; install {self.install_hint}"
            )
        mismatch = build_mismatch("torch", torch.version.cuda, "a torch build for CUDA {major}")
        if mismatch:
            return Probe.missing(mismatch)
        if not torch.cuda.is_available():
            return Probe.missing("torch.cuda.is_available() is False")
        torch.cuda.set_device(self.device_index)
        return Probe(True, version=torch.__version__, device=device_line(self.device_index))

    def xp_device(self) -> Any:
        # array-api-compat's torch namespace is one object for the CPU and CUDA; its
        # creation functions pass device=None, torch's default device (the CPU).
        return self._device()

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device_index)

    def event_timer(self, clock: str) -> RoundTimer:
        return TorchEventTimer(self)

    def devices(self) -> list[Any]:
        import torch

        return [torch.device("cuda", i) for i in range(torch.cuda.device_count())]

    def runtime_version(self) -> str:
        import torch

        return str(torch.version.cuda or "")

    def peer_copy(self) -> PeerCopy:
        from pytest_gpucheck.backends.torch.peer_copy import TorchPeerCopy

        return TorchPeerCopy()


class TorchEventTimer(CudaEventTimer):
    """``torch.cuda.Event(enable_timing=True)`` on the device's current stream."""

    def _new_event(self) -> Any:
        import torch

        return torch.cuda.Event(enable_timing=True)

    def _record(self, event: Any) -> Any:
        import torch

        event.record(torch.cuda.current_stream(self.backend.device_index))
        return event

    def _elapsed_seconds(self, start: Any, end: Any) -> float:
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


class TorchOps(ArrayOps):
    """PyTorch tensors (CPU or CUDA)."""

    def take(self, a: Any, index: Index) -> Any:
        return a[index].clone(memory_format=self.xp.contiguous_format)

    def heat_interior(self, u: Any, alpha: float) -> Any:
        out = u.clone()
        centre = u[1:-1]
        out[1:-1] = centre + alpha * (u[:-2] - 2 * centre + u[2:])
        return out

    def partial_sum(self, x: Any) -> Any:
        return self.xp.sum(x).reshape(1)

    def partial_dot(self, x: Any, y: Any) -> Any:
        return self.xp.sum(x * y).reshape(1)

    def saxpy(self, alpha: float, x: Any, y: Any) -> Any:
        return alpha * x + y
