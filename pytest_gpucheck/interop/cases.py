"""Hypothesis strategies for exchange cases (:class:`~pytest_gpucheck.backends.exchange_case.Case`).

A case is plain data (so hypothesis can draw, shrink and print it); each
producer adapter turns it into an array of its framework.  The layout is a
contiguous base array in C or Fortran order plus a view of it: slices with
positive steps, which give offset (``sliced``) and gapped (``strided``) views.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_gpucheck.backends.dtypes import DTYPE_NAMES
from pytest_gpucheck.backends.exchange_case import Bounds, Case

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

def cases(
    dtypes: tuple[str, ...] = DTYPE_NAMES,
    *,
    readonly: bool | None = None,
    max_dims: int = 3,
    max_side: int = 5,
) -> SearchStrategy[Case]:
    """Hypothesis strategy for cases: every dtype, 0-d and size-0 shapes, all layouts.

    ``readonly`` fixes the flag (None draws it).
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    @st.composite
    def axis_view(draw: st.DrawFn, extent: int) -> Bounds:
        if draw(st.booleans()):  # half the axes keep the whole extent
            return (0, extent, 1)
        start = draw(st.integers(0, extent))
        stop = draw(st.integers(start, extent))
        return (start, stop, draw(st.integers(1, 3)))

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0,
                                      max_side=max_side))
        sliced = draw(st.booleans())
        view = tuple(draw(axis_view(n)) for n in shape) if sliced else ()
        return Case(
            dtype=draw(st.sampled_from(dtypes)),
            base_shape=tuple(shape),
            order=draw(st.sampled_from("CF")),
            view=view,
            readonly=draw(st.booleans()) if readonly is None else readonly,
            seed=draw(st.integers(0, 2**32 - 1)),
        )

    return build()
