"""One exchange case: dtype, shape, memory layout, read-only flag and values.

A case is plain data (so hypothesis can draw, shrink and print it); each
producer adapter turns it into an array of its framework.  The layout is a
contiguous base array in C or Fortran order plus a view of it: slices with
positive steps, which give offset (``sliced``) and gapped (``strided``) views.
The adapters (in the backends' folders) take a case, so it lives with them;
:mod:`pytest_gpucheck.interop.cases` draws cases with hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_gpucheck.backends.dtypes import numpy_dtype

Bounds = tuple[int, int, int]  # start, stop, step of one axis' slice


@dataclass(frozen=True)
class Case:
    """An array to hand over: what the producer makes before the exchange."""

    dtype: str
    base_shape: tuple[int, ...]
    order: str = "C"  # memory order of the base array: "C" or "F"
    view: tuple[Bounds, ...] = ()  # one slice per axis; () means the whole base
    readonly: bool = False
    seed: int = 0

    def __repr__(self) -> str:
        flag = " read-only" if self.readonly else ""
        return (f"Case({self.dtype}{list(self.base_shape)} order={self.order} "
                f"view=[{self.view_text}] {self.layout}{flag} seed={self.seed})")

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(*bounds) for bounds in self.view)

    @property
    def view_text(self) -> str:
        return ", ".join(f"{a}:{b}:{c}" for a, b, c in self.view) or ":"

    @property
    def layout(self) -> str:
        """``c``, ``f``, ``sliced`` (offset/partial rows) or ``strided`` (gaps)."""
        full = all(bounds == (0, extent, 1)
                   for bounds, extent in zip(self.view, self.base_shape, strict=False))
        if full:
            return "f" if self.order == "F" and len(self.base_shape) > 1 else "c"
        return "strided" if any(step > 1 for _, _, step in self.view) else "sliced"

    def base_host(self) -> np.ndarray:
        """The base array on the host, contiguous in ``order``, filled from ``seed``."""
        size = int(np.prod(self.base_shape, dtype=np.int64))
        flat = values(numpy_dtype(self.dtype), size, self.seed)
        order: Literal["C", "F"] = "F" if self.order == "F" else "C"
        return np.reshape(flat, self.base_shape, order=order).copy(order=order)

    def host(self) -> np.ndarray:
        """The array the producer must hold: the view of the base (values and layout)."""
        base = self.base_host()
        return base[self.slices] if self.view else base


def values(dtype: np.dtype, size: int, seed: int) -> np.ndarray:
    """``size`` pseudo-random values of ``dtype``: distinct enough to expose a stride mix-up."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, size).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size, endpoint=True, dtype=dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
    # float16/32/64 and bfloat16 (whose ml_dtypes type casts from float32)
    return (rng.standard_normal(size) * 64).astype(np.float32).astype(dtype)
