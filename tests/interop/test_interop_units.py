"""Fast unit tests of the interop pieces: cases, facts, registration, the helper, the matrix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.backends.array_facts import is_compact, significant_strides
from pytest_gpucheck.backends.dtypes import DTYPE_NAMES, numpy_dtype
from pytest_gpucheck.interop import (
    assert_shares_memory,
    converter,
    register_converter,
    unregister_converter,
    user_converters,
)
from pytest_gpucheck.interop.adapters import get_adapter
from pytest_gpucheck.interop.cases import Case, cases
from pytest_gpucheck.interop.classify import flipped, same_bytes
from pytest_gpucheck.interop.documented import DOCUMENTED
from pytest_gpucheck.interop.lifetime import complement
from pytest_gpucheck.interop.matrix import CELL_PROPERTY, OUTCOMES_PROPERTY, PairMatrix


@settings(max_examples=40, deadline=None)
@given(cases())
def test_case_host_array_has_the_case_layout(case: Case) -> None:
    if case.dtype == "bfloat16":  # NumPy has none; ml_dtypes (JAX brings it) does
        pytest.importorskip("ml_dtypes")
    host = case.host()
    base = case.base_host()
    assert host.dtype == numpy_dtype(case.dtype)
    assert base.flags.f_contiguous if case.order == "F" else base.flags.c_contiguous
    assert same_bytes(host, base[case.slices] if case.view else base)  # seeded: reproducible
    if case.layout == "strided":
        assert any(step > 1 for _, _, step in case.view)


@pytest.mark.slow
def test_cases_reach_every_layout_and_edge_shape() -> None:
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(cases())
    def collect(case: Case) -> None:
        host = case.host()
        seen.add(case.layout)
        seen.add("0-d" if host.ndim == 0 else "")
        seen.add("empty" if host.size == 0 else "")
        seen.add("read-only" if case.readonly else "")
        seen.add(case.dtype)

    collect()
    assert {"c", "f", "sliced", "strided", "0-d", "empty", "read-only"} <= seen
    assert set(DTYPE_NAMES) <= seen


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_flipped_and_complement_change_every_value(dtype: str) -> None:
    if dtype == "bfloat16":  # NumPy has none; ml_dtypes (JAX brings it) does
        pytest.importorskip("ml_dtypes")
    host = Case(dtype, (7,), seed=1).host()
    assert not same_bytes(flipped(host[3]), np.asarray(host[3]))
    other = complement(host)
    assert other.dtype == host.dtype
    assert all(not same_bytes(other[i], host[i]) for i in range(host.size))


def test_compactness_and_significant_strides() -> None:
    a = np.zeros((3, 4))
    assert is_compact(a.shape, a.strides, 8)
    assert is_compact(a.T.shape, a.T.strides, 8)  # a transposition is compact
    assert not is_compact(a[:, ::2].shape, a[:, ::2].strides, 8)
    assert significant_strides((1, 4), (999, 8)) == (None, 8)


def test_registration_rejects_bad_input_naming_the_fix() -> None:
    with pytest.raises(pytest.UsageError, match="use one of: numpy"):
        register_converter(lambda a: a, producer="tensorflow", consumer="numpy")
    with pytest.raises(pytest.UsageError, match="use 'numpy'"):
        register_converter(lambda a: a, producer="numba-cpu", consumer="numpy")
    with pytest.raises(pytest.UsageError, match="library protocol"):
        register_converter(lambda a: a, producer="numpy", consumer="numpy", protocol="dlpack")
    with pytest.raises(pytest.UsageError, match="not suite dtypes"):
        register_converter(lambda a: a, producer="numpy", consumer="numpy", dtypes=("f8",))


def test_decorator_registers_and_unregisters() -> None:
    @converter(producer="numpy", consumer="torch-cpu", name="unit_test_converter")
    def mine(array: np.ndarray) -> object:
        return array

    (found,) = [c for c in user_converters() if c.name == "unit_test_converter"]
    assert (found.producer, found.consumer, found.expectation) == ("numpy", "torch-cpu",
                                                                   "zero-copy")
    assert found.func is mine
    with pytest.raises(pytest.UsageError, match="already registered"):
        register_converter(lambda a: a, producer="numpy", consumer="numpy",
                           name="unit_test_converter")
    unregister_converter("unit_test_converter")
    assert all(c.name != "unit_test_converter" for c in user_converters())


def test_assert_shares_memory_accepts_views_across_frameworks() -> None:
    torch = pytest.importorskip("torch")
    host = np.arange(12.0).reshape(3, 4)
    assert_shares_memory(host, host[:, :])
    assert_shares_memory(host.T, torch.from_numpy(host).T)
    assert_shares_memory(host[1:, ::2], torch.from_dlpack(host)[1:, ::2])


@pytest.mark.parametrize(
    ("make_other", "message"),
    [
        (lambda a: a.copy(), "data pointer"),
        (lambda a: a.astype(np.float32), "dtype"),
        (lambda a: a.reshape(4, 3), "shape"),
        (lambda a: np.lib.stride_tricks.as_strided(a, a.shape, (8, 24)), "strides"),
    ],
)
def test_assert_shares_memory_names_the_first_difference(make_other: object,
                                                          message: str) -> None:
    host = np.arange(12.0).reshape(3, 4)
    with pytest.raises(AssertionError, match=f"do not share memory: {message}"):
        assert_shares_memory(host, make_other(host))  # type: ignore[operator]


def test_assert_shares_memory_catches_a_pointer_that_lies() -> None:
    """Same address and layout, different memory: the write probe tells them apart."""

    host = np.arange(6.0)
    torch = pytest.importorskip("torch")
    other = torch.from_numpy(host.copy())
    fake = get_adapter(get_backend("torch-cpu"))
    real_facts = fake.facts

    def lying_facts(array: object) -> object:
        facts = real_facts(array)
        if array is other:
            from dataclasses import replace

            return replace(facts, pointer=host.ctypes.data)
        return facts

    fake.facts = lying_facts  # type: ignore[method-assign, assignment]
    try:
        with pytest.raises(AssertionError, match=r"write to a .* is not seen"):
            assert_shares_memory(host, other)
    finally:
        del fake.facts


def test_documented_entries_cite_sources_and_name_real_protocols() -> None:
    from pytest_gpucheck.interop.converters import PROTOCOLS

    keys = [entry.key for entry in DOCUMENTED]
    assert len(keys) == len(set(keys))
    for entry in DOCUMENTED:
        assert entry.source.startswith("https://"), entry.key
        assert set(entry.protocols) <= set(PROTOCOLS), entry.key
        if entry.trigger is not None:
            assert entry.trigger.protocol in entry.protocols, entry.key


def _report(cell: dict[str, str], outcome: str, measured: dict[str, object],
            skip: str = "") -> pytest.TestReport:
    longrepr = ("file", 1, f"Skipped: {skip}") if outcome == "skipped" else None
    return pytest.TestReport("x", ("x", 1, "x"), {}, outcome, longrepr, "call",  # type: ignore[arg-type]
                             user_properties=[(CELL_PROPERTY, cell),
                                              (OUTCOMES_PROPERTY, measured)])


def test_matrix_summarises_cells_per_protocol() -> None:
    matrix = PairMatrix()
    cell = {"protocol": "dlpack", "producer": "numpy", "consumer": "jax-cpu"}
    matrix.record(_report(cell, "passed", {"counts": {"zero-copy": 3, "copies": 2},
                                           "documented": ["jax-copies-unaligned"]}))
    matrix.record(_report({**cell, "consumer": "torch-cpu"}, "failed",
                          {"counts": {"wrong": 1}}))
    matrix.record(_report({**cell, "protocol": "cai"}, "skipped", {}, "not available: no CAI"))
    lines = "\n".join(matrix.terminal_lines())
    for text in ("interop dlpack:", "interop cai:", "zero-copy/copies", "WRONG",
                 "jax-copies-unaligned", "interop not available:", "  no CAI"):
        assert text in lines
    # Every word a cell can show is explained under the tables.
    split = lines.splitlines()
    start = next(i for i, line in enumerate(split) if line.startswith("legend: "))
    end = next((i for i in range(start + 1, len(split)) if not split[i].startswith("  ")),
               len(split))
    assert all(len(line) <= 80 for line in split[start:end]), split[start:end]
    legend = " ".join(line.strip() for line in split[start:end])
    for word in ("zero-copy:", "copies, refuses:", "WRONG:", "wrong (known):", "n/a:", "-:"):
        assert word in legend, legend
    data = matrix.to_json()
    assert {c["summary"] for c in data["cells"]} == {"zero-copy/copies", "WRONG", "n/a"}
    assert "| numpy |" in matrix.markdown()


def test_strided_memory_view_facts_match_the_array() -> None:
    """cuda.core's StridedMemoryView counts strides in elements; facts are in bytes.

    cuda.core can view host memory without a driver, so this runs on the CPU tier.
    """
    core = pytest.importorskip("cuda.core")
    del core
    from pytest_gpucheck.backends.cuda_python.adapter import (
        memory_view_facts,
        strided_memory_view_class,
    )

    view_class = strided_memory_view_class()
    numpy = get_adapter(get_backend("numpy"))
    for case in (Case("float32", (4, 6), view=((1, 4, 1), (0, 6, 2))),
                 Case("int16", (3, 5), order="F"), Case("float64", (5,), readonly=True)):
        array = numpy.produce(case)
        facts = memory_view_facts(view_class.from_dlpack(array, stream_ptr=-1))
        expected = numpy.facts(array)
        assert facts == expected, (case, facts, expected)


class _Described:
    """A host array behind a hand-written CUDA Array Interface (the checker reads only it)."""

    def __init__(self, array: np.ndarray, **changes: object) -> None:
        strides = None if array.flags.c_contiguous else array.strides
        self.interface = {"shape": array.shape, "typestr": array.dtype.str,
                          "data": (array.ctypes.data, not array.flags.writeable),
                          "strides": strides, "version": 3, "stream": None, **changes}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({}, None),
        ({"strides": None}, "strides None (C-contiguous)"),
        ({"typestr": "<f4"}, "typestr '<f4'"),
        ({"version": 1}, "version is 1"),
        ({"version": 2, "stream": 7}, "stream 7 given under version 2"),
        ({"stream": "7"}, "stream is a str"),
        ({"stream": 0}, "stream is 0"),
        ({"data": (0, False)}, "data pointer"),
        ({"shape": (4, 3)}, "shape (4, 3)"),
    ],
)
def test_cai_checker_catches_each_misdescription(changes: dict[str, object],
                                                 problem: str | None) -> None:
    from pytest_gpucheck.interop.cai_export import cai_problems

    numpy = get_adapter(get_backend("numpy"))
    array = numpy.produce(Case("float64", (3, 4), order="F"))  # strides must be given
    problems = cai_problems(_Described(array, **changes).interface, numpy.facts(array))
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_cai_checker_catches_a_lost_read_only_flag() -> None:
    from pytest_gpucheck.interop.cai_export import cai_problems

    numpy = get_adapter(get_backend("numpy"))
    array = numpy.produce(Case("int32", (5,), readonly=True))
    interface = _Described(array, data=(array.ctypes.data, False)).interface
    assert cai_problems(interface, numpy.facts(array)) == [
        "read-only flag False != the array's True"]


def test_a_table_wider_than_the_terminal_is_split_by_consumers() -> None:
    """Four frameworks' dlpack table was 86 columns: at 80 its rows wrapped, and a cell
    ('wrong (known)') went to the next line under the producer column."""
    matrix = PairMatrix()
    names = ("numpy", "jax-cpu", "torch-cpu", "cupy")
    for producer in names:
        for consumer in names:
            cell = {"protocol": "dlpack", "producer": producer, "consumer": consumer}
            matrix.record(_report(cell, "passed",
                                  {"counts": {"zero-copy": 2, "copies": 1, "refuses": 1}}))
    whole = matrix.terminal_lines()
    assert max(len(line) for line in whole) > 80, whole  # the broken layout: one table
    lines = matrix.terminal_lines(80)
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    headers = [line.split() for line in lines if line.startswith("  producer")]
    assert len(headers) == 2, "\n".join(lines)  # two tables, each with the producer column
    assert [name for header in headers for name in header[3:]] == list(names)
    rows = [line for line in lines if line.startswith("  jax-cpu ")]
    assert all(line.count("zero-copy/copies/refuses") == 2 for line in rows), rows
