"""The routers' template and dispatcher, and an isolated item's trip through the package.

The dispatcher asks the routers in their order, not as they were registered; the
template tears down after a routed item as pytest's runner would.  ``docs/architecture.md``
(An isolated item's trip) draws the path an item run in an isolation worker takes in the
process pytest runs items in, from the dispatcher to its replayed report: here a
profiler follows it in a user's run (``pytest --gpu-isolate=backend``), so a change that
sends the item through more than six files, or back into a file it came from (the
controller module the item once entered three times), fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trip_tracing import CHAIN, trip

#: At most this many of the package's files on an isolated item's trip (issue 30).
MOST_FILES = 6

#: The temporary project's conftest: while the dispatcher runs an item in the user's
#: process, record for every call into the package the files of the package on the call
#: stack below the dispatcher (callee first, repeats in a row merged); calls made by
#: pytest's hooks (the terminal, the matrix: ``replay`` logs the reports through them)
#: are the report's readers, as for an item run here, and are left out.
TRACER = '''
import json, os, sys
import pytest
import pytest_gpucheck
from pytest_gpucheck.environment import REPORT_SINK_VARIABLE

PACKAGE = os.path.dirname(pytest_gpucheck.__file__) + os.sep
DISPATCHER = os.path.join("processes", "routers", "base.py")

''' + CHAIN + '''

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if os.environ.get(REPORT_SINK_VARIABLE):  # the worker: its own trip is not traced
        return (yield)
    chains = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            chain = _chain(frame)
            if chain and chain[-1] == DISPATCHER:
                chains.append(chain)

    sys.setprofile(profile)
    try:
        return (yield)
    finally:
        sys.setprofile(None)
        with open(os.environ["TRIP_RECORD"], "a", encoding="utf-8") as out:
            out.write(json.dumps({"item": item.nodeid, "chains": chains}) + "\\n")
'''

USER_TESTS = '''
def test_sums(xp):
    assert int(xp.asarray([1, 2]).sum()) == 3


def test_sums_again(xp):
    assert int(xp.asarray([2, 2]).sum()) == 4
'''


def test_a_trip_through_too_many_files_or_back_into_one_is_told() -> None:
    """The measure itself, on the trip the issue followed in the code before the routers
    owned the protocol (the controller entered again from the worker pool) and on the
    trip drawn in the docs."""
    before = [["processes/routers/isolation.py", "processes/routers/base.py"],
              ["selection.py", "processes/routers/isolation.py", "processes/routers/base.py"],
              ["processes/controller.py", "processes/pool.py", "processes/controller.py",
               "processes/routers/isolation.py", "processes/routers/base.py"],
              ["processes/wire.py", "processes/pool.py", "processes/routers/isolation.py",
               "processes/routers/base.py"],
              ["processes/guard.py", "processes/pool.py", "processes/routers/isolation.py",
               "processes/routers/base.py"]]
    files, reentered = trip(before)
    assert len(files) == 7
    assert reentered == ["processes/controller.py"]
    now = [["processes/routers/isolation.py", "processes/routers/base.py"],
           ["processes/replaying.py", "processes/routers/isolation.py",
            "processes/routers/base.py"],
           ["processes/guard.py", "processes/pool.py", "processes/routers/isolation.py",
            "processes/routers/base.py"],
           ["processes/wire.py", "processes/pool.py", "processes/routers/isolation.py",
            "processes/routers/base.py"],
           ["processes/replaying.py", "processes/routers/base.py"]]
    files, reentered = trip(now)
    assert len(files) == MOST_FILES
    assert reentered == []


@pytest.mark.slow
def test_an_isolated_items_trip_enters_at_most_six_files_none_twice(
        pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest --gpu-isolate=backend`` on a user's project: each item's trip in the
    user's process enters at most six files of the package, re-enters none, and goes
    through a worker (the pool) and back (the replay): the trip the docs draw."""
    record = tmp_path / "trip.jsonl"
    monkeypatch.setenv("TRIP_RECORD", str(record))
    pytester.makeconftest(TRACER)
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("--gpu-backends=numpy", "--gpu-isolate=backend",
                                "-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
    trips = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert [entry["item"] for entry in trips] == [
        "test_user.py::test_sums[numpy]", "test_user.py::test_sums_again[numpy]"]
    for entry in trips:
        files, reentered = trip(entry["chains"])
        assert len(files) <= MOST_FILES, (entry["item"], files)
        assert reentered == [], (entry["item"], reentered, entry["chains"])
        assert {"processes/pool.py", "processes/replaying.py"} <= set(files), files


#: The router of the first kind in the order: it claims the items named "routed" and
#: fails them with its own message.
FIRST_ROUTER_CLASS = '''
class FirstRouter(Router):
    """A router of the first kind in the order, claiming the items named "routed"."""

    kind = "sanitizer"

    def claims(self, item):
        return "routed" in item.name

    def run(self, item, nextitem):
        return [failed_report(item, "ran by the first router in the order")]
'''

FIRST_ROUTER = '''
import pytest
from pytest_gpucheck.processes import Router, failed_report

''' + FIRST_ROUTER_CLASS + '''


def pytest_configure(config):
    # Registered before the core's routers (the core configures last): the order of
    # registration is not the order the dispatcher asks in.
    config.pluginmanager.register(FirstRouter(), "first-router")
'''

ROUTED_TESTS = '''
import pytest


def test_routed(xp):
    assert int(xp.asarray([1]).sum()) == 1


@pytest.mark.skip(reason="skipped here")
def test_routed_but_skipped(xp):
    pass


def test_on_no_backend():
    pass
'''


def test_the_dispatcher_asks_the_routers_in_order_not_as_registered(
        pytester: pytest.Pytester) -> None:
    """A router earlier in the order than isolation runs the item it claims, although the
    isolation router (registered later) would claim it too; a skipped item and one on no
    backend run here.  (With one ``pytest_runtest_protocol`` per router, pluggy asked the
    last registered first: the isolation router took the item.)"""
    pytester.makeconftest(FIRST_ROUTER)
    pytester.makepyfile(test_user=ROUTED_TESTS)
    result = pytester.runpytest("--gpu-backends=numpy", "--gpu-isolate=backend",
                                "-p", "no:cacheprovider", "-p", "no:xdist", "-rA")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    result.stdout.fnmatch_lines(["*ran by the first router in the order*",
                                 "FAILED test_user.py::test_routed[[]numpy[]]*"])
    assert "isolation worker" not in result.stdout.str()


TEARING_ROUTER = '''
import os
import pytest
from pytest_gpucheck.processes import Router, failed_report, replay

''' + FIRST_ROUTER_CLASS + '''

    if os.environ.get("ROUTER_SKIPS_TEAR_DOWN"):
        def protocol(self, item, nextitem):  # the broken twin: replays, never tears down
            replay(item, self.run(item, nextitem))


def pytest_configure(config):
    config.pluginmanager.register(FirstRouter(), "first-router")
'''

MODULE_M = '''
import pytest

@pytest.fixture(scope="module")
def resource():
    yield "up"

def test_here(resource):
    assert resource == "up"

def test_routed_last_of_module():
    pass
'''


@pytest.mark.parametrize("broken", [False, True], ids=["template", "no-tear-down"])
def test_a_routed_item_tears_down_the_fixtures_the_next_item_does_not_share(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, broken: bool) -> None:
    """The template's last step: after a routed item, the module fixtures the item before
    it kept up for it are finished when the next item is in another module.  A router
    that only replays (the MPI spawn router did) leaves them up, and pytest fails the
    next item's setup."""
    if broken:
        monkeypatch.setenv("ROUTER_SKIPS_TEAR_DOWN", "1")
    pytester.makeconftest(TEARING_ROUTER)
    pytester.makepyfile(test_m=MODULE_M, test_n="def test_next():\n    pass\n")
    result = pytester.runpytest("--gpu-isolate=none", "-p", "no:cacheprovider",
                                "-p", "no:xdist", "-p", "no:randomly")
    if broken:
        result.assert_outcomes(passed=1, failed=1, errors=1)
        result.stdout.fnmatch_lines(["*previous item was not torn down properly*"])
    else:
        result.assert_outcomes(passed=2, failed=1)


COUNTING_ROUTER = '''
import collections
import pytest
from pytest_gpucheck.processes import Router, failed_report

''' + FIRST_ROUTER_CLASS + '''

ASKED = collections.Counter()


class CountingRouter(FirstRouter):
    def claims(self, item):
        ASKED[item.name] += 1
        return super().claims(item)


def pytest_configure(config):
    config.pluginmanager.register(CountingRouter(), "first-router")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"claims asked: {sorted(ASKED.items())}")
'''

SIDE_EFFECT_TESTS = '''
import os
import pathlib


def test_routed(gpu_backend):
    pathlib.Path(os.environ["RAN_DIR"], "routed").touch()


def test_other(gpu_backend):
    pathlib.Path(os.environ["RAN_DIR"], "other").touch()
'''


@pytest.mark.slow
def test_each_item_is_routed_once_and_run_by_one_router_only(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The dispatcher decides every item's router once, as the loop starts, and the
    routers that look at other items (the simulator's batch for its child) take that
    decision rather than their own rule.  The old code asked this router's claims twice
    per item (the protocol's look-up, then the isolation router's "claimed before"
    question); the batch then held the first router's item too, harmless here only
    because the child loads the same conftest and routes it the same way (the item's
    body ran nowhere, which the test also holds)."""
    ran = tmp_path / "ran"
    ran.mkdir()
    monkeypatch.setenv("RAN_DIR", str(ran))
    pytester.makeconftest(COUNTING_ROUTER)
    pytester.makepyfile(test_user=SIDE_EFFECT_TESTS)
    result = pytester.runpytest("--gpu-backends=numba-cudasim", "-p", "no:cacheprovider",
                                "-p", "no:xdist", "-rA")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*ran by the first router in the order*"])
    assert sorted(path.name for path in ran.iterdir()) == ["other"]
    result.stdout.fnmatch_lines(["claims asked: [[]('test_other[[]numba-cudasim[]]', 1), "
                                 "('test_routed[[]numba-cudasim[]]', 1)[]]"])
