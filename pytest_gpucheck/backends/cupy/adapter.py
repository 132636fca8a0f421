"""CuPy arrays: DLPack both ways, CAI both ways (``cupy.asarray`` imports CAI without a copy).

Written against CuPy's documented API; it has not run on a GPU in this
project's CI (CuPy needs one).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts


def _cupy() -> Any:
    import cupy  # type: ignore[import-not-found, unused-ignore]

    return cupy


def accepts_keyword(func: Any, name: str) -> bool | None:
    """True/False when ``func``'s signature can be read, None for opaque Cython callables."""
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return None


class CupyAdapter(Adapter):
    """``cupy.ndarray`` on the backend's device (CuPy has no read-only arrays)."""

    name = "cupy"
    readonly = "never"

    @property
    def device(self) -> str:
        return f"cuda:{self.backend.device_index}"

    def dtype_problem(self, dtype_name: str) -> str | None:
        problem = super().dtype_problem(dtype_name)
        if problem is None:
            from pytest_gpucheck.backends.dtypes import numpy_dtype

            try:
                _cupy().empty(1, dtype=numpy_dtype(dtype_name))
            except Exception as exc:
                problem = f"cupy has no {dtype_name} arrays ({type(exc).__name__})"
        return problem

    def upload(self, host: np.ndarray) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.backend.device_index):
            array = cupy.empty(host.shape, dtype=host.dtype,
                               order="F" if not host.flags.c_contiguous else "C")
            array.set(host)
        return array

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        cupy = _cupy()
        if copy is not None and accepts_keyword(cupy.from_dlpack, "copy") is False:
            raise NotAvailable(f"cupy {cupy.__version__}: from_dlpack takes no copy argument")

        def import_dlpack(obj: Any) -> Any:
            if copy is None:
                return cupy.from_dlpack(obj)
            try:
                return cupy.from_dlpack(obj, copy=copy)
            except TypeError as exc:  # CuPy < 13 has no copy argument (opaque signature)
                if "copy" in str(exc):
                    raise NotAvailable(f"cupy {cupy.__version__}: from_dlpack takes no copy "
                                       "argument") from exc
                raise

        return import_dlpack

    def cai_importer(self) -> Callable[[Any], Any]:
        return _cupy().asarray  # type: ignore[no-any-return]

    def owns(self, array: Any) -> bool:
        return isinstance(array, _cupy().ndarray)

    def facts(self, array: Any) -> ArrayFacts:
        return ArrayFacts(
            pointer=int(array.data.ptr),
            shape=tuple(array.shape),
            strides=tuple(int(s) for s in array.strides),
            dtype=np.dtype(array.dtype),
            device=f"cuda:{array.device.id}",
            readonly=False,
        )

    def to_host(self, array: Any) -> np.ndarray:
        self.synchronize()
        return _cupy().asnumpy(array)  # type: ignore[no-any-return]

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array[index] = _cupy().asarray(np.asarray(value).reshape(()))
        self.synchronize()

    # Stream hooks of the stream-ordering check.
    @property
    def queues_pending_fill(self) -> bool:
        return True

    @property
    def has_stream_copy(self) -> bool:
        return True

    @contextlib.contextmanager
    def _pending_fill(self, value: float, elements: int, spin_cycles: int) -> Iterator[Any]:
        cupy = _cupy()
        with cupy.cuda.Device(self.backend.device_index):
            array = cupy.zeros(elements, dtype=cupy.float32)
            cupy.cuda.Device().synchronize()
            spin = cupy.RawKernel(SPIN_SOURCE, "spin")
            side = cupy.cuda.Stream(non_blocking=True)
            with side:
                spin((1,), (1,), (np.int64(spin_cycles),))
                array.fill(value)
                yield array

    def pending_fill(self, value: float, elements: int,
                     spin_cycles: int) -> contextlib.AbstractContextManager[Any]:
        return self._pending_fill(value, elements, spin_cycles)

    def stream_copy(self, array: Any) -> Any:
        return array.copy()


#: A kernel that keeps one thread busy for ``cycles`` clock cycles.
SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
