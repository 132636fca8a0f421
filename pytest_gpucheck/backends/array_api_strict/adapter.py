"""array-api-strict arrays in the interop suite: DLPack on the CPU device, nothing else.

The standard's one exchange protocol is DLPack (``from_dlpack``, ``__dlpack__``);
it has no read-only arrays of its own (it produces none) and no CUDA Array
Interface.  Its arrays hold a NumPy
array, and DLPack exports that memory, so facts are measured on the exported view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_gpucheck.backends.adapter_base import Adapter
from pytest_gpucheck.backends.array_facts import ArrayFacts, host_facts


class ArrayApiStrictAdapter(Adapter):
    """``array_api_strict`` arrays on the CPU device."""

    name = "array-api-strict"
    readonly = "never"  # the standard has no read-only arrays

    @property
    def _strict(self) -> Any:
        import array_api_strict

        return array_api_strict

    def dtype_problem(self, dtype_name: str) -> str | None:
        problem = super().dtype_problem(dtype_name)
        if problem is None and not hasattr(self._strict, dtype_name):
            # The standard's dtypes only: no float16, no bfloat16.
            return f"array-api-strict has no {dtype_name} (not a dtype of the array API standard)"
        return problem

    def upload(self, host: np.ndarray) -> Any:
        # copy=True keeps the memory order of `host` (the copy is NumPy's, order K).
        return self._strict.asarray(host, copy=True)

    def dlpack_importer(self, copy: bool | None) -> Callable[[Any], Any]:
        strict = self._strict

        def import_dlpack(obj: Any) -> Any:
            return strict.from_dlpack(obj, copy=copy)

        return import_dlpack

    def owns(self, array: Any) -> bool:
        return isinstance(array, type(self._strict.asarray(0)))

    def facts(self, array: Any) -> ArrayFacts:
        # The memory itself, not a copy.  The standard has no read-only arrays, but the
        # NumPy array inside one may be read-only (imported from a read-only producer);
        # DLPack carries the flag.
        return host_facts(np.from_dlpack(array))

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(np.from_dlpack(array), copy=True)

    def write(self, array: Any, index: tuple[int, ...], value: np.ndarray) -> None:
        array[index] = self._strict.asarray(value)

    def synchronize(self) -> None:
        """array-api-strict works synchronously."""
