"""Block decomposition of a global index range over ranks (the remainder goes to the first ranks).

>>> [block_range(11, 3, r) for r in range(3)]
[(0, 4), (4, 8), (8, 11)]
"""

from __future__ import annotations

from collections.abc import Callable

#: ``partition(n, parts, index) -> (start, stop)``: the signature the checks accept,
#: so a user's own decomposition can be checked too.
Partition = Callable[[int, int, int], tuple[int, int]]


def block_range(n: int, parts: int, index: int) -> tuple[int, int]:
    """The half-open range of block ``index`` when ``n`` items are split into ``parts`` blocks."""
    if parts < 1 or not 0 <= index < parts:
        raise ValueError(f"block {index} of {parts} does not exist")
    base, extra = divmod(n, parts)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)


def coverage_problem(n: int, ranges: list[tuple[int, int]]) -> str | None:
    """Why ``ranges`` (in rank order) do not tile ``[0, n)`` exactly once, or None."""
    position = 0
    for rank, (start, stop) in enumerate(ranges):
        if start != position or stop < start:
            return (f"rank {rank} holds [{start}, {stop}) but the next element to cover is "
                    f"{position}: the decomposition overlaps or leaves a gap")
        position = stop
    if position != n:
        return (f"the blocks cover [0, {position}) of [0, {n}): {n - position} element(s) lost "
                "(the remainder of an uneven split?)")
    return None
