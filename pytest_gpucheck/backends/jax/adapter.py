"""JAX arrays on the CPU and on CUDA: immutable, DLPack both ways.

JAX has no views (slicing copies) and its arrays are immutable, so as a
producer it always hands over a compact, read-only array; as a consumer it is
checked by writing through the producer side only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter, NotAvailable
from pytest_gpucheck.backends.array_facts import ArrayFacts, c_strides
from pytest_gpucheck.backends.jax.compat import major_to_minor

if TYPE_CHECKING:
    from pytest_gpucheck.backends.exchange_case import Case


class JaxAdapter(Adapter):
    """``jax.Array`` on the backend's device."""

    readonly = "always"

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.name = backend.name  # type: ignore[misc]  # jax-cpu or jax-gpu

    def _jax(self) -> Any:
        return self.backend._jax()  # enables x64 before any array is made

    @property
    def device(self) -> str:
        return "cpu" if self.backend.platform == "cpu" else f"cuda:{self.backend.device_index}"

    def upload(self, host: np.ndarray) -> Any:
        return self._jax().device_put(host, self.backend._device())

    def produce(self, case: Case) -> Any:
        """The case's values as a compact JAX array (JAX has no views to mimic the layout).

        Slicing a JAX array copies anyway, and would compile an XLA program per
        new shape: slice on the host and upload the result instead.
        """
        problem = self.case_problem(case)
        if problem:
            raise NotAvailable(problem)
        return self.upload(np.array(case.host(), order="C", copy=True))

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        jax = self._jax()
        from_dlpack = jax.dlpack.from_dlpack
        if copy is not None and "copy" not in inspect.signature(from_dlpack).parameters:
            raise NotAvailable(f"jax {jax.__version__}: from_dlpack takes no copy argument")

        def import_dlpack(obj: Any) -> Any:
            return from_dlpack(obj, copy=copy) if copy is not None else from_dlpack(obj)

        return import_dlpack

    def owns(self, array: Any) -> bool:
        return isinstance(array, self._jax().Array)

    def facts(self, array: Any) -> ArrayFacts:
        shape = tuple(array.shape)
        dtype = np.dtype(array.dtype)
        size = int(np.prod(shape, dtype=np.int64))
        device = next(iter(array.devices()))
        return ArrayFacts(
            # XLA may hold no buffer for an empty array; there is nothing to point at.
            pointer=int(array.unsafe_buffer_pointer()) if size else 0,
            shape=shape,
            strides=_layout_strides(array, shape, dtype.itemsize),
            dtype=dtype,
            device="cpu" if device.platform == "cpu" else f"cuda:{device.id}",
            readonly=True,
        )

    def to_host(self, array: Any) -> np.ndarray:
        # np.asarray(array) would serve JAX's cached host copy, which hides later
        # writes through shared memory: read the buffer itself, through DLPack on
        # the CPU (no compilation), else through an on-device copy.
        if self.device == "cpu" and array.dtype.name != "bfloat16":
            return np.array(np.from_dlpack(array), copy=True)
        import jax.numpy as jnp

        return np.array(jnp.array(array, copy=True), copy=True)

    def writable(self, array: Any) -> bool:
        return False

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        raise TypeError("JAX arrays are immutable")

    def synchronize(self) -> None:
        """Reads through :meth:`to_host` already wait for the array."""

    # Stream hook: on a GPU, JAX copies on its own stream (it queues no side-stream fill).
    @property
    def has_stream_copy(self) -> bool:
        return self.device != "cpu"

    def stream_copy(self, array: Any) -> Any:
        if not self.has_stream_copy:
            return super().stream_copy(array)
        import jax.numpy as jnp

        return jnp.array(array, copy=True)


def _layout_strides(array: Any, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides from the array's XLA layout (an imported Fortran array keeps its order)."""
    order = major_to_minor(array)
    if not order or len(order) != len(shape):
        return c_strides(shape, itemsize)
    strides = [0] * len(shape)
    step = itemsize
    for axis in reversed(tuple(order)):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)
