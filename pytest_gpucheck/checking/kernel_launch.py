"""Launch configurations passed to kernels that take one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchConfig:
    """A CUDA-style launch: ``grid`` blocks of ``block`` threads, x first.

    Both tuples have one entry per dimension the kernel uses (1, 2 or 3), in
    CUDA order: ``grid[0]`` and ``block[0]`` are the x extent (fastest-varying,
    the last array axis).
    """

    grid: tuple[int, ...]
    block: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.grid) != len(self.block) or not 1 <= len(self.grid) <= 3:
            raise ValueError(f"grid {self.grid} and block {self.block} need the same rank 1..3")
        if min(self.grid + self.block) < 1:
            raise ValueError(f"grid {self.grid} and block {self.block} must be positive")

    @property
    def threads_per_block(self) -> int:
        total = 1
        for extent in self.block:
            total *= extent
        return total

    @property
    def total_threads(self) -> tuple[int, ...]:
        """Threads along each dimension (x first)."""
        return tuple(g * b for g, b in zip(self.grid, self.block, strict=False))

    def __str__(self) -> str:
        return f"grid={self.grid} block={self.block}"
