"""The zero-copy interop suite: every converter between every pair of selected frameworks.

For each ordered pair of selected, available frameworks on one device, and
for each protocol (``dlpack`` with ``copy=None``, ``dlpack-nocopy``,
``dlpack-copy``, ``cai``) plus every user converter, hypothesis draws cases
(all dtypes, 0-d and empty shapes, C / Fortran / sliced / strided views,
read-only producers) and each hand-over is measured and classified
(``pytest_gpucheck.interop.classify``).  Zero-copy passes; a copy or a
refusal passes only when the library documents it
(``pytest_gpucheck.interop.documented``); anything wrong fails with the
measured facts.  Known upstream defects make the item an expected failure.
Run: ``pytest --pyargs pytest_gpucheck.conformance.test_interop --gpu-backends=cpu``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gpucheck.backends.adapter_base import NotAvailable
from pytest_gpucheck.backends.dtypes import DTYPE_NAMES
from pytest_gpucheck.conformance.harness import conformance_settings
from pytest_gpucheck.interop.adapters import get_adapter
from pytest_gpucheck.interop.cases import Case, cases
from pytest_gpucheck.interop.classify import exchange
from pytest_gpucheck.interop.documented import DOCUMENTED, Documented, Verdict, judge
from pytest_gpucheck.interop.lifetime import check_lifetimes
from pytest_gpucheck.interop.matrix import (
    CHANGED_PROPERTY,
    EXPORT_PROPERTY,
    OUTCOMES_PROPERTY,
)
from pytest_gpucheck.interop.outcomes import InteropMismatch
from pytest_gpucheck.interop.pairs import Pair, available_frameworks, pair_params
from pytest_gpucheck.selection import get_selection

#: Interop examples are cheap (no JIT): this many times the profile's example count.
EXAMPLES_FACTOR = 3
#: Cases per lifetime example (they share one garbage collection).
LIFETIME_BATCH = 6
#: Protocols whose result may share memory, so the lifetime check has work to do.
LIFETIME_PROTOCOLS = ("dlpack", "dlpack-nocopy", "cai")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    if "interop_pair" in metafunc.fixturenames:
        lifetime = metafunc.function.__name__ == "test_lifetime"
        protocols = LIFETIME_PROTOCOLS if lifetime else ("dlpack", "dlpack-nocopy",
                                                         "dlpack-copy", "cai")
        params = pair_params(config, protocols)
        metafunc.parametrize("interop_pair", params or [_nothing_selected()])
    if "gpu_pair" in metafunc.fixturenames:
        params = [p for p in pair_params(config, ("dlpack",)) if _on_gpu(p.values[0], config)]
        metafunc.parametrize("gpu_pair", params or [pytest.param(None, id="no-gpu-pair", marks=(
            pytest.mark.skip(reason="stream ordering needs two GPU frameworks selected "
                             "(e.g. --gpu-backends=gpu)"),))])
    if "interop_producer" in metafunc.fixturenames:
        names = available_frameworks(config)
        metafunc.parametrize("interop_producer", [pytest.param(n, id=n) for n in names]
                             or [_nothing_selected()])
    if "documented" in metafunc.fixturenames:
        metafunc.parametrize("documented", [e for e in DOCUMENTED if e.trigger],
                             ids=lambda e: e.key)


def _on_gpu(pair: Pair, config: pytest.Config) -> bool:
    producer, consumer = pair.adapters(config)
    return producer.device.startswith("cuda:") and producer.device == consumer.device


def _nothing_selected() -> Any:
    return pytest.param(None, id="no-pair", marks=pytest.mark.skip(
        reason="no framework with arrays is selected (try --gpu-backends=cpu)"))


class Tally:
    """What one item measured, for the pair matrix."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.documented: set[str] = set()
        self.known: dict[str, str] = {}

    def add(self, verdict: Verdict) -> None:
        self.counts[verdict.outcome.value] = self.counts.get(verdict.outcome.value, 0) + 1
        if verdict.documented is not None:
            target = self.known if verdict.kind == "known" else None
            if target is not None:
                # The xfail reason names the upstream source, so the link is one click away.
                target[verdict.documented.key] = (f"{verdict.documented.summary} "
                                                  f"({verdict.documented.source})")
            else:
                self.documented.add(verdict.documented.key)

    def record(self, item: pytest.Item) -> None:
        item.user_properties.append((OUTCOMES_PROPERTY, {
            "counts": self.counts, "documented": sorted(self.documented),
            "known": sorted(self.known)}))


def _prepare(pair: Pair, config: pytest.Config) -> tuple[Any, Any]:
    """The two adapters, or a skip naming every side that lacks the protocol."""
    producer, consumer = pair.adapters(config)
    reasons = []
    try:
        pair.converter.build(consumer)
    except NotAvailable as exc:
        reasons.append(str(exc))
    sample = producer.produce(_anchors(producer, pair)[0])
    missing = pair.converter.missing_producer_attribute(sample)
    if missing:
        reasons.append(f"{producer.name} arrays have no {missing}")
    if reasons:
        pytest.skip("not available: " + "; ".join(reasons))
    return producer, consumer


def _usable_dtypes(producer: Any, pair: Pair) -> tuple[str, ...]:
    dtypes = pair.converter.dtypes or DTYPE_NAMES
    usable = tuple(name for name in dtypes if producer.dtype_problem(name) is None)
    if not usable:
        pytest.skip(f"not available: {producer.name} holds none of {', '.join(dtypes)}")
    return usable


def _strategy(producer: Any, pair: Pair) -> st.SearchStrategy[Case]:
    readonly = None if producer.readonly == "flag" else False
    return cases(_usable_dtypes(producer, pair), readonly=readonly)


def _anchors(producer: Any, pair: Pair) -> list[Case]:
    """Cases every run checks first, whatever hypothesis draws: one per layout kind."""
    usable = _usable_dtypes(producer, pair)
    dtype = "float64" if "float64" in usable else usable[0]
    anchors = [
        Case(dtype, (3, 4)),
        Case(dtype, (3, 4), order="F"),  # a transposed view
        Case(dtype, (4, 6), view=((1, 4, 1), (0, 6, 2))),  # offset and gaps
        Case(dtype, ()),
        Case(dtype, (0, 3)),
    ]
    if producer.readonly == "flag":
        anchors.append(Case(dtype, (5,), readonly=True))
    return anchors


def _dtype_anchors(producer: Any, pair: Pair) -> list[Case]:
    """One small array of every usable dtype: the matrix shows the outcomes that
    every run meets (a dtype one protocol refuses), not those a random draw met."""
    return [Case(dtype, (2, 3)) for dtype in _usable_dtypes(producer, pair)]


def _count(verdict: Verdict, tally: Tally, reasons: set[str]) -> None:
    """One exchange's verdict: not available (its reason kept), a failure (raised), or
    counted in the tally."""
    if verdict.kind == "not available":
        reasons.add(verdict.message)
        return
    if verdict.kind == "fail":
        raise InteropMismatch(verdict.message)
    tally.add(verdict)


def _run(check: Callable[[], None], tally: Tally, reasons: set[str],
         request: pytest.FixtureRequest) -> None:
    """Run the hypothesis ``check``, record what it counted on the item, and end the test
    as skipped when nothing was available, as an expected failure on a known defect."""
    try:
        check()
    finally:
        tally.record(request.node)
    if not tally.counts and reasons:
        pytest.skip("not available: " + "; ".join(sorted(reasons)))
    if tally.known:
        pytest.xfail("known defect: " + "; ".join(f"{k}: {s}" for k, s in tally.known.items()))


@pytest.mark.interop
def test_exchange(interop_pair: Pair, request: pytest.FixtureRequest) -> None:
    """Hand arrays over with this converter; accept only zero-copy or documented behaviour."""
    producer, consumer = _prepare(interop_pair, request.config)
    tally, reasons = Tally(), set[str]()

    _, profile = conformance_settings()

    @settings(profile, max_examples=profile.max_examples * EXAMPLES_FACTOR, deadline=None)
    @given(case=_strategy(producer, interop_pair))
    def hand_over(case: Case) -> None:
        result = exchange(case, producer, consumer, interop_pair.converter)
        _count(judge(case, result, interop_pair.converter), tally, reasons)

    for anchor in _anchors(producer, interop_pair) + _dtype_anchors(producer, interop_pair):
        hand_over = example(case=anchor)(hand_over)
    _run(hand_over, tally, reasons, request)


@pytest.mark.interop
def test_lifetime(interop_pair: Pair, request: pytest.FixtureRequest) -> None:
    """The consumer's array stays valid after the producer is dropped and its memory reused."""
    producer, consumer = _prepare(interop_pair, request.config)
    tally, reasons = Tally(), set[str]()

    _, profile = conformance_settings()

    @settings(profile, max_examples=max(2, profile.max_examples // 4), deadline=None)
    @given(batch=st.lists(_strategy(producer, interop_pair), min_size=LIFETIME_BATCH,
                          max_size=LIFETIME_BATCH))
    def drop_producer(batch: list[Case]) -> None:
        results = check_lifetimes(batch, producer, consumer, interop_pair.converter)
        for case, result in zip(batch, results, strict=False):
            _count(judge(case, result, interop_pair.converter), tally, reasons)

    drop_producer = example(batch=_anchors(producer, interop_pair))(drop_producer)
    drop_producer = example(batch=_dtype_anchors(producer, interop_pair))(drop_producer)
    _run(drop_producer, tally, reasons, request)


@pytest.mark.interop
def test_stream_order(gpu_pair: Pair, request: pytest.FixtureRequest) -> None:
    """A write still queued on the producer's stream is seen after a DLPack import (GPU)."""
    from pytest_gpucheck.interop.streams import check_stream_order

    producer, consumer = _prepare(gpu_pair, request.config)
    try:
        problems = check_stream_order(producer, consumer, gpu_pair.converter.build(consumer))
    except NotAvailable as exc:
        pytest.skip(f"not available: {exc}")
    assert not problems, f"{gpu_pair.id}: " + "; ".join(problems)


@pytest.mark.interop
def test_dlpack_export(interop_producer: str, request: pytest.FixtureRequest) -> None:
    """``__dlpack_device__`` is truthful and ``__dlpack__`` honours every keyword it takes."""
    from pytest_gpucheck.interop.export import check_dlpack_export, missing_dlpack

    producer = get_adapter(get_selection(request.config).backend(interop_producer))
    seen: dict[str, Any] = {"producer": interop_producer}
    sample = producer.produce(_anchors(producer, _export_pair(interop_producer))[0])
    missing = missing_dlpack(producer, sample)
    if missing:
        request.node.user_properties.append((EXPORT_PROPERTY, {**seen, "missing": missing}))
        pytest.skip(f"not available: {missing}")

    _, profile = conformance_settings()

    @settings(profile, deadline=None)
    @given(case=cases(_usable_dtypes(producer, _export_pair(interop_producer)),
                      readonly=None if producer.readonly == "flag" else False)
           .filter(lambda case: case.dtype != "bfloat16"))  # NumPy's export refuses it
    def export(case: Case) -> None:
        report = check_dlpack_export(producer, case)
        seen.update(device=report.device, versioned=report.versioned,
                    keywords=report.keywords)
        if report.problems:
            raise InteropMismatch(f"{interop_producer}: {case!r}\n" + "\n".join(report.problems))

    try:
        export()
    finally:
        request.node.user_properties.append((EXPORT_PROPERTY, seen))


@pytest.mark.interop
def test_cai_export(interop_producer: str, request: pytest.FixtureRequest) -> None:
    """``__cuda_array_interface__`` describes its array truthfully (GPU producers)."""
    from pytest_gpucheck.interop.cai_export import cai_problems

    producer = get_adapter(get_selection(request.config).backend(interop_producer))
    sample = producer.produce(_anchors(producer, _export_pair(interop_producer))[0])
    if not hasattr(sample, "__cuda_array_interface__"):
        pytest.skip(f"not available: {interop_producer} arrays have no __cuda_array_interface__")
    _, profile = conformance_settings()

    @settings(profile, deadline=None)
    @given(case=_strategy(producer, _export_pair(interop_producer)))
    def describe(case: Case) -> None:
        array = producer.produce(case)
        problems = cai_problems(array.__cuda_array_interface__, producer.facts(array))
        if problems:
            raise InteropMismatch(f"{interop_producer}: {case!r}\n" + "\n".join(problems))

    for anchor in _anchors(producer, _export_pair(interop_producer)):
        describe = example(case=anchor)(describe)
    describe()


def _export_pair(producer: str) -> Pair:
    from pytest_gpucheck.interop.converters import library_converter

    return Pair(library_converter("dlpack", producer, producer))


def test_documented_behaviour_reproduces(documented: Documented,
                                         request: pytest.FixtureRequest) -> None:
    """Each documented copy, refusal or known defect still happens on these versions.

    When a library changes for the better (a refusal that now works, a copy
    that is now zero-copy), this is skipped as "changed in <the installed
    version>"; any other change fails naming the versions the entry was seen
    with, and the table in ``documented_table.py`` is updated.
    """
    from pytest_gpucheck.interop.documented import (
        changed,
        installed_version,
        prerequisite_problem,
    )

    trigger = documented.trigger
    assert trigger is not None
    if not documented.applies():
        pytest.skip(f"{documented.key} is a behaviour of {documented.releases}; installed: "
                    f"{installed_version(documented.framework) or 'none'}")
    names = available_frameworks(request.config)
    missing = [n for n in (trigger.producer, trigger.consumer) if n not in names]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (select with --gpu-backends)")
    prerequisite = prerequisite_problem(documented)
    if prerequisite:
        pytest.skip(f"{documented.key}: its trigger needs {trigger.case.dtype}: {prerequisite}")
    from pytest_gpucheck.interop.converters import library_converter

    selection = get_selection(request.config)
    producer = get_adapter(selection.backend(trigger.producer))
    consumer = get_adapter(selection.backend(trigger.consumer))
    converter = library_converter(trigger.protocol, trigger.producer, trigger.consumer)
    result = exchange(trigger.case, producer, consumer, converter)
    change = changed(documented, judge(trigger.case, result, converter), result)
    if change is None:
        return
    if change.welcome:
        request.node.user_properties.append((CHANGED_PROPERTY, {documented.key: change.message}))
        pytest.skip(change.message)
    raise AssertionError(change.message)
