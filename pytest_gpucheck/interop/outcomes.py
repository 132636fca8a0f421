"""The outcomes of one exchange, and the error a rejected exchange raises."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_gpucheck.backends.array_facts import ArrayFacts


class Outcome(str, enum.Enum):
    """What happened to one hand-over (the cells of the pair matrix)."""

    ZERO_COPY = "zero-copy"  # same memory, layout and dtype kept, writes visible both ways
    COPIES = "copies"  # an independent copy with the same values
    REFUSES = "refuses"  # raised instead of handing the array over
    WRONG = "wrong"  # values, strides, dtype, read-only flag or lifetime silently broken
    NOT_AVAILABLE = "not available"  # the protocol is missing on one side
    EMPTY = "empty"  # size 0: shape, dtype and device kept; no memory to share or copy


class InteropMismatch(AssertionError):
    """An exchange did something the suite does not accept (the message says what)."""


@dataclass
class Exchange:
    """The measured result of handing one array from a producer to a consumer."""

    outcome: Outcome
    producer: ArrayFacts | None = None
    consumer: ArrayFacts | None = None
    problems: list[str] = field(default_factory=list)
    error: BaseException | None = None
    reason: str = ""  # why NOT_AVAILABLE

    @property
    def error_text(self) -> str:
        if self.error is None:
            return ""
        first = (str(self.error).strip().splitlines() or [""])[0]
        return f"{type(self.error).__name__}: {first}"

    def describe(self) -> str:
        """One paragraph for a failure message."""
        lines = [f"outcome: {self.outcome.value}"]
        if self.producer is not None:
            lines.append(f"producer: {self.producer.describe()}")
        if self.consumer is not None:
            lines.append(f"consumer: {self.consumer.describe()}")
        if self.error is not None:
            lines.append(f"error: {self.error_text}")
        lines += [f"problem: {problem}" for problem in self.problems]
        return "\n".join(lines)
