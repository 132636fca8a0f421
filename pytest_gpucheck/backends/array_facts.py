"""What the suite measures about one array: where its memory is and how it is laid out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArrayFacts:
    """Measured properties of an array on either side of an exchange.

    ``pointer`` is the address of element ``[0, ..., 0]`` (offsets included);
    ``strides`` are in bytes.  ``device`` is a short key such as ``cpu`` or
    ``cuda:0``; two arrays can share memory only when the keys are equal.
    """

    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    device: str
    readonly: bool

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def describe(self) -> str:
        flag = " read-only" if self.readonly else ""
        return (f"{self.dtype.name}{list(self.shape)} strides={self.strides} "
                f"at {self.pointer:#x} on {self.device}{flag}")


def host_facts(array: np.ndarray) -> ArrayFacts:
    """The facts of a NumPy array in host memory (NumPy's own, or the memory inside an
    array-api-strict array, read through DLPack)."""
    return ArrayFacts(
        pointer=int(array.__array_interface__["data"][0]),
        shape=tuple(array.shape),
        strides=tuple(array.strides),
        dtype=array.dtype,
        device="cpu",
        readonly=not array.flags.writeable,
    )


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    strides: list[int] = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def significant_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int | None, ...]:
    """Strides with those of length-1 axes blanked out.

    A stride along an axis of extent 1 is never used to address memory, and
    DLPack producers may normalise it to anything, so comparing it would
    report differences that cannot change a single value.
    """
    return tuple(None if extent == 1 else stride
                 for extent, stride in zip(shape, strides, strict=False))


def is_compact(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """True when the array covers a dense block: some permutation of the axes is C-contiguous.

    This is the layout DLPack importers that cannot express gaps (XLA) still
    accept; sliced and stepped views are not compact.
    """
    used = sorted((abs(s), n) for n, s in zip(shape, strides, strict=False) if n != 1)
    expected = itemsize
    for stride, extent in used:
        if stride != expected:
            return False
        expected *= extent
    return True
