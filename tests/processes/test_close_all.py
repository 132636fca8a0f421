"""``close_all``: an interruption while one child closes stops that child and every
child not yet closed before it goes on, so no child outlives the session."""

from __future__ import annotations

import pytest

from pytest_gpucheck.processes.deaths import close_all


class Child:
    def __init__(self, log: list[str], name: str, interrupt: bool = False) -> None:
        self.log, self.name, self.interrupt = log, name, interrupt

    def close(self) -> None:
        self.log.append(f"close {self.name}")
        if self.interrupt:
            raise KeyboardInterrupt

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")


def test_children_close_in_turn() -> None:
    log: list[str] = []
    close_all([Child(log, "a"), Child(log, "b")])
    assert log == ["close a", "close b"]


def test_an_interrupt_stops_the_child_closing_and_those_after_it() -> None:
    log: list[str] = []
    children = [Child(log, "a"), Child(log, "b", interrupt=True), Child(log, "c")]
    with pytest.raises(KeyboardInterrupt):
        close_all(children)
    assert log == ["close a", "close b", "stop b", "stop c"]
