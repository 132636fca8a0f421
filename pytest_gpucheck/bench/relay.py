"""pytest-benchmark's results of tests run in a child process, handed to this one.

A test run in an isolation worker, the numba-cudasim child or an MPI rank is
measured there, by the child's own pytest-benchmark session; the user's
``--benchmark-json``, ``--benchmark-save``/``--benchmark-autosave``,
``--benchmark-compare`` (``-fail``), ``--benchmark-histogram`` and the table
act in the process the user started.  So each child sends every benchmark its
tests finished along with the test's report, and this process puts them into
pytest-benchmark's session (``config._benchmarksession.benchmarks``), where
its own ``pytest_sessionfinish`` saves, compares and shows them as if the test
had run here.

Per report, not at the child's session end: a child killed by a later test
keeps what it finished (its reports are already written), and the test it
died in fails without a result, so without a benchmark, as in-process.

On the wire a benchmark is the plain data of pytest-benchmark's ``Metadata``
(its ``as_dict`` fields, every round's time, ``has_error`` and the profile's
rows); :func:`rebuild` makes a ``Metadata`` of it whose statistics are
computed from the same rounds, so every number is the child's.  Parameters
that JSON cannot hold keep their ``str`` (the table, ``--benchmark-group-by
param:NAME``) and pytest-benchmark's JSON text (``UNSERIALIZABLE[...]``).

Nothing here imports pytest-benchmark until a report carries a benchmark.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_gpucheck.environment import REPORT_SINK_VARIABLE

#: The report attribute that carries a test's benchmarks (a plain attribute: pytest's
#: report serialization, the one pytest-xdist uses, takes it along).
ATTRIBUTE = "gpucheck_benchmarks"
#: Set on a rebuilt ``Metadata``: a child measured it, so it is not sent on again as
#: this process's own (a child's child hands its benchmarks through).
RELAYED = "gpucheck_relayed"
#: Types JSON holds as themselves, whose ``str`` JSON does not change.
_PLAIN = (str, int, float, bool, type(None))


class BenchmarkRelay:
    """Both ends of the relay, registered in every process.

    In a child (a process with a report sink) it puts the benchmarks each test
    finished on that test's report; in the process that replays the report it
    puts them into pytest-benchmark's session.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.in_child = bool(os.environ.get(REPORT_SINK_VARIABLE))
        self._sent = 0
        #: Reports this process tagged itself: its own results, not ones to take in.
        self._own: set[int] = set()

    def _session(self) -> Any:
        return getattr(self.config, "_benchmarksession", None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        session = self._session() if self.in_child else None
        if session is None:
            return report
        # Every benchmark made since the last report: pytest-benchmark appends one
        # when a test starts measuring, and a report comes after each phase.
        made = session.benchmarks[self._sent:]
        self._sent = len(session.benchmarks)
        sent = [as_wire(bench) for bench in made
                if not getattr(bench, RELAYED, False) and bench]
        if sent:
            setattr(report, ATTRIBUTE, sent)
            self._own.add(id(report))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if id(report) in self._own:
            self._own.discard(id(report))
            return
        sent = getattr(report, ATTRIBUTE, None)
        session = self._session()
        # A disabled session holds no benchmarks (--benchmark-disable, or pytest-xdist,
        # under which pytest-benchmark switches itself off).
        if not sent or session is None or session.disabled:
            return
        session.benchmarks.extend(rebuild(data, report.nodeid) for data in sent)


def as_wire(bench: Any) -> dict[str, Any]:
    """One benchmark (pytest-benchmark's ``Metadata``) as plain JSON data."""
    from pytest_benchmark.utils import funcname

    profile = getattr(bench, "cprofile_stats", None)
    return {
        "group": bench.group,
        "name": bench.name,
        "fullname": bench.fullname,
        "params": _wire_mapping(bench.params),
        "param": bench.param,
        "extra_info": _wire_mapping(bench.extra_info),
        # As Metadata.as_dict writes them: a timer as its name.
        "options": _wire_mapping({key: funcname(value) if callable(value) else value
                                  for key, value in bench.options.items()}),
        "iterations": bench.iterations,
        "data": list(bench.stats.data),
        "has_error": bool(bench.has_error),
        # pytest-benchmark reads a profile's rows only (pstats.Stats.stats).
        "cprofile": None if profile is None else [
            [*where, *run[:4]] for where, run in profile.stats.items()],
    }


def rebuild(data: Mapping[str, Any], nodeid: str) -> Any:
    """A pytest-benchmark ``Metadata`` of a benchmark sent by :func:`as_wire`, named as
    this session names its test (``nodeid``: a child may name files outside the
    rootdir differently)."""
    from pytest_benchmark.stats import Metadata, Stats

    bench = Metadata.__new__(Metadata)  # its __init__ wants the live fixture
    bench.name = data["name"]
    bench.fullname = nodeid
    bench.group = data["group"]
    bench.param = data["param"]
    bench.params = _read_mapping(data["params"])
    bench.extra_info = _read_mapping(data["extra_info"])
    bench.options = _read_mapping(data["options"])
    bench.iterations = data["iterations"]
    bench.stats = Stats()
    bench.stats.data = [float(value) for value in data["data"]]
    # Metadata.has_error asks the fixture.
    bench.fixture = SimpleNamespace(has_error=bool(data["has_error"]))
    rows = data.get("cprofile")
    # pytest-benchmark reads a profile's rows only (pstats.Stats.stats).
    profile: Any = None if rows is None else SimpleNamespace(
        stats={(row[0], row[1], row[2]): tuple(row[3:7]) for row in rows})
    bench.cprofile_stats = profile
    setattr(bench, RELAYED, True)
    return bench


# -- values JSON cannot hold as they are ------------------------------------------------------
def _wire_mapping(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {str(key): _wire_value(value) for key, value in values.items()}


def _wire_value(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    from pytest_benchmark.utils import safe_dumps

    # pytest-benchmark writes such a value with safe_dumps and shows it with str().
    return {"gpucheck_shown": str(value), "json": json.loads(safe_dumps(value))}


def _read_mapping(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {key: _read_value(value) for key, value in values.items()}


def _read_value(value: Any) -> Any:
    if not (isinstance(value, dict) and set(value) == {"gpucheck_shown", "json"}):
        return value
    written = value["json"]
    kind = _SHOWN.get(type(written))
    if kind is None:  # None or a bool: no subclass can show otherwise
        return written
    shown = kind(written)
    shown.shown = str(value["gpucheck_shown"])
    return shown


class _Shown:
    """A value JSON writes as the child's ``safe_dumps`` did and ``str`` shows as the
    child's ``str`` did (a NumPy dtype parameter, say)."""

    shown: str

    def __str__(self) -> str:
        return self.shown


class _ShownStr(_Shown, str):
    pass


class _ShownInt(_Shown, int):
    pass


class _ShownFloat(_Shown, float):
    pass


class _ShownList(_Shown, list[Any]):
    pass


class _ShownDict(_Shown, dict[str, Any]):
    pass


#: A JSON value's type -> the subclass of it that shows as the child's ``str`` did.
_SHOWN: dict[type, Any] = {str: _ShownStr, int: _ShownInt, float: _ShownFloat,
                                    list: _ShownList, dict: _ShownDict}
