"""Guard-banded device buffers: catch every write outside an output.

A kernel's output is allocated as a view in the middle of a larger device
buffer of the backend under test.  The elements around it (the *guard bands*:
``width`` elements before and after a 1-D output; ``width`` rows and columns
on every side of an n-D output, whose interior is then also a non-contiguous
view) hold a sentinel bit pattern; the output itself holds a poison value
(so elements never written show up) or the reduction's identity.  After the
launch the whole buffer is copied back and every guard element whose bits
changed is reported in the output's own coordinates: ``-1`` is one before the
start, ``n`` one past the end.

This is the check that catches a missing bounds check on a real GPU, where an
overrun writes silently into whatever memory follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from pytest_gpucheck.checking.device_views import slice_view

#: Guard elements on each side of every axis.  Several elements, not one, so an
#: overrun by a whole warp-sized stride still lands in the guard.
GUARD_WIDTH = 8

#: Raw bit patterns of the sentinels: a quiet NaN with a recognisable payload
#: for floats (no arithmetic produces it), 0x5A... for integers.
_FLOAT_GUARD_BITS = {4: 0x7FC5A5A5, 8: 0x7FF8A5A5A5A5A5A5, 2: 0x7E5A}
_FLOAT_POISON_BITS = {4: 0x7FC0DEAD, 8: 0x7FF800000000DEAD, 2: 0x7E01}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _from_bits(bits: int, dtype: np.dtype) -> np.ndarray:
    return np.array(bits, dtype=_UNSIGNED[dtype.itemsize]).view(dtype)


def guard_value(dtype: DTypeLike) -> np.ndarray:
    """The sentinel stored in guard bands (a 0-d array, to keep NaN payloads intact)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return _from_bits(_FLOAT_GUARD_BITS[dtype.itemsize], dtype)
    if dtype.kind in "iu":
        return _from_bits(int("5A" * dtype.itemsize, 16), dtype)
    if dtype.kind == "b":
        return np.array(True)
    raise TypeError(f"no guard sentinel for dtype {dtype}")


def poison_value(dtype: DTypeLike) -> np.ndarray:
    """The value an output starts with so that unwritten elements are visible.

    A NaN (with its own payload) for floats, the most negative value for
    signed integers (index maps and counts are never negative), the largest
    for unsigned ones.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return _from_bits(_FLOAT_POISON_BITS[dtype.itemsize], dtype)
    if dtype.kind == "i":
        return np.array(np.iinfo(dtype).min, dtype=dtype)
    if dtype.kind == "u":
        return np.array(np.iinfo(dtype).max, dtype=dtype)
    raise TypeError(f"no poison value for dtype {dtype}")


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bitwise equality (NaN payloads included) of two same-dtype arrays."""
    if a.dtype.kind == "b":
        return np.asarray(a == b)
    unsigned = _UNSIGNED[a.dtype.itemsize]
    return np.asarray(
        np.ascontiguousarray(a).view(unsigned) == np.ascontiguousarray(b).view(unsigned)
    )


@dataclass
class GuardReadback:
    """What a guarded buffer held after the launch."""

    name: str
    shape: tuple[int, ...]
    #: The output (or in-place array) region, copied to the host.
    region: np.ndarray
    #: Guard elements that changed, in the region's coordinates.
    overwritten: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.overwritten

    def describe(self, limit: int = 8) -> str:
        """One line naming the out-of-bounds writes, e.g. ``wrote 1 element past the
        end of out: index 7``; empty when there were none."""
        if not self.overwritten:
            return ""
        if len(self.shape) == 1:
            n = self.shape[0]
            before = [i for (i,) in self.overwritten if i < 0]
            after = [i for (i,) in self.overwritten if i >= n]
            parts = []
            if before:
                parts.append(_count_phrase(before, f"before the start of {self.name}", limit))
            if after:
                parts.append(_count_phrase(after, f"past the end of {self.name}", limit))
            return "; ".join(parts)
        where = ", ".join(str(i) for i in self.overwritten[:limit])
        more = f", ... ({len(self.overwritten) - limit} more)" if len(self.overwritten) > limit \
            else ""
        sides = sorted({_side(i, self.shape) for i in self.overwritten})
        noun = "element" if len(self.overwritten) == 1 else "elements"
        return (f"wrote {len(self.overwritten)} {noun} outside {self.name} "
                f"(shape {self.shape}, {' and '.join(sides)}): {where}{more}")


def _count_phrase(indices: list[int], where: str, limit: int) -> str:
    noun = "element" if len(indices) == 1 else "elements"
    label = "index" if len(indices) == 1 else "indices"
    shown = ", ".join(str(i) for i in indices[:limit])
    more = f", ... ({len(indices) - limit} more)" if len(indices) > limit else ""
    return f"wrote {len(indices)} {noun} {where}: {label} {shown}{more}"


def _side(index: tuple[int, ...], shape: tuple[int, ...]) -> str:
    for axis, (i, n) in enumerate(zip(index, shape, strict=True)):
        if i < 0:
            return f"before the start of axis {axis}"
        if i >= n:
            return f"past the end of axis {axis}"
    return "inside"  # pragma: no cover - only guard elements are described


class GuardedBuffer:
    """A device array of ``shape``/``dtype`` surrounded by guard bands.

    ``view`` is what the kernel gets; :meth:`read` copies everything back and
    reports changed guard elements.  ``init`` fills the region: a scalar
    (poison, identity) or an array of ``shape`` (in-place kernels).
    """

    def __init__(self, backend: Any, name: str, shape: tuple[int, ...], dtype: DTypeLike,
                 init: Any, *, width: int = GUARD_WIDTH) -> None:
        self.backend = backend
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.width = width
        padded = tuple(s + 2 * width for s in self.shape)
        host = np.empty(padded, dtype=self.dtype)
        host[...] = guard_value(self.dtype)
        self.interior = tuple(slice(width, width + s) for s in self.shape)
        # astype keeps the bits of a same-dtype NaN payload (np.full would not promise it).
        host[self.interior] = np.asarray(init).astype(self.dtype, copy=False)
        self._initial = host
        self.parent = backend.to_device(host)
        if isinstance(self.parent, np.ndarray) and 0 in self.shape:
            # NumPy points an empty slice at the start of its base; start it at
            # the interior instead, so an overrun of an empty output lands where
            # it would on a device (just past the start of out).
            start = self.parent[tuple(slice(width, None) for _ in self.shape)]
            self.view = np.lib.stride_tricks.as_strided(start, shape=self.shape,
                                                        strides=self.parent.strides)
        else:
            self.view = slice_view(self.parent, self.interior)

    def read(self) -> GuardReadback:
        """Copy the buffer back; report the region and every changed guard element."""
        after = np.asarray(self.backend.to_host(self.parent))
        changed = ~same_bits(after, self._initial)
        changed[self.interior] = False
        overwritten = [tuple(int(i) - self.width for i in idx) for idx in np.argwhere(changed)]
        return GuardReadback(self.name, self.shape, after[self.interior].copy(), overwritten)


__all__ = [
    "GUARD_WIDTH",
    "GuardReadback",
    "GuardedBuffer",
    "guard_value",
    "poison_value",
    "same_bits",
]
