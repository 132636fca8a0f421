"""Each deliberately broken converter is rejected, directly and through the whole suite."""

from __future__ import annotations

import json
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from interop_broken_converters import BROKEN, honest

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.backends.numpy.adapter import NumpyAdapter
from pytest_gpucheck.interop.adapters import get_adapter
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.classify import exchange
from pytest_gpucheck.interop.converters import Converter
from pytest_gpucheck.interop.documented import judge
from pytest_gpucheck.interop.lifetime import check_lifetime
from pytest_gpucheck.interop.outcomes import Outcome

NUMPY = get_adapter(get_backend("numpy"))
TRANSPOSED = Case("float64", (4, 6), order="F")  # a transposed view of a C array
GAPPED = Case("float32", (5, 7), view=((1, 5, 1), (0, 7, 2)))
READ_ONLY = Case("float64", (4, 5), readonly=True)
FREED = Case("float64", (16, 16), seed=3)


class _Lease:
    """A producer array's claim on a pool block; when the last array over it dies,
    the block goes back to the pool (the ``finalize`` callback)."""

    def __init__(self, pool: ReusingPool, block: np.ndarray, host: np.ndarray) -> None:
        self.__array_interface__ = {"data": (block.ctypes.data, False), "shape": host.shape,
                                    "typestr": host.dtype.str, "strides": host.strides,
                                    "version": 3}
        weakref.finalize(self, pool.free.append, block)


class ReusingPool(NumpyAdapter):
    """NumPy arrays from a pool that hands a freed block straight back to the next upload.

    The lifetime check drops the producer and allocates again, hoping to get its
    memory: NumPy's allocator does that only sometimes (an xdist worker that has run
    other tests often does not), so the proof below controls the reuse instead of
    hoping for it. The pool keeps every block mapped: a converter that lost the
    producer reads memory that changed owner, never freed memory.
    """

    def __init__(self) -> None:
        super().__init__(get_backend("numpy"))
        self.free: list[np.ndarray] = []
        self.blocks: list[np.ndarray] = []
        self.reused = 0  # uploads that got a block back from a dropped array

    def upload(self, host: np.ndarray) -> np.ndarray:
        host = host.copy(order="K")  # C or F contiguous: its strides fit a fresh block
        same = [b for b in self.free if b.nbytes == host.nbytes]
        if same:
            block = same[-1]
            self.free.remove(block)
            self.reused += 1
        else:
            block = np.empty(max(host.nbytes, 1), np.uint8)
            self.blocks.append(block)
        array: np.ndarray = np.asarray(_Lease(self, block, host))  # its base is the lease
        array[...] = host
        return array


def user(func: object, name: str) -> Converter:
    return Converter("numpy", "numpy", "custom", name=name, origin="user",
                     expectation="zero-copy", func=func)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("case", [TRANSPOSED, GAPPED, READ_ONLY, FREED, Case("int8", ()),
                                  Case("bool", (0, 3))], ids=repr)
def test_honest_converter_is_zero_copy(case: Case) -> None:
    converter = user(honest, "honest")
    result = check_lifetime(case, NUMPY, NUMPY, converter)
    assert result.outcome in (Outcome.ZERO_COPY, Outcome.EMPTY), result.describe()
    assert judge(case, result, converter).kind == "ok"


@pytest.mark.parametrize(
    ("broken", "case", "problem"),
    [
        ("copies", TRANSPOSED, "copies although it claims zero-copy"),
        ("drops_strides", TRANSPOSED, "strides changed on shared memory"),
        ("drops_strides", GAPPED, "strides changed on shared memory"),
        ("changes_dtype", GAPPED, "dtype changed: float32 -> uint32"),
        ("loses_readonly", READ_ONLY, "read-only lost"),
    ],
)
def test_broken_converter_is_wrong(broken: str, case: Case, problem: str) -> None:
    converter = user(BROKEN[broken], broken)
    result = exchange(case, NUMPY, NUMPY, converter)
    verdict = judge(case, result, converter)
    assert result.outcome is Outcome.WRONG
    assert verdict.kind == "fail"
    assert any(problem in p for p in result.problems), result.describe()


def test_dropped_strides_also_scramble_values() -> None:
    result = exchange(TRANSPOSED, NUMPY, NUMPY, user(BROKEN["drops_strides"], "drops_strides"))
    assert any(p.startswith("values changed: at (0, 1)") for p in result.problems)


def test_freed_producer_is_detected_after_reuse() -> None:
    converter = user(BROKEN["frees_producer"], "frees_producer")
    # The exchange alone looks perfect: same pointer, layout, values, write-through.
    assert exchange(FREED, NUMPY, NUMPY, converter).outcome is Outcome.ZERO_COPY
    pool = ReusingPool()
    result = check_lifetime(FREED, pool, NUMPY, converter)
    assert pool.reused, "the check did not drop the producer and allocate again"
    assert result.outcome is Outcome.WRONG
    assert "does not keep the producer alive" in result.problems[-1]
    assert judge(FREED, result, converter).kind == "fail"


def test_honest_converter_survives_the_reusing_pool() -> None:
    # The twin: the pool reuses only what nobody holds, so a converter that keeps
    # the producer alive keeps its values.
    pool = ReusingPool()
    result = check_lifetime(FREED, pool, NUMPY, user(honest, "honest"))
    assert result.outcome is Outcome.ZERO_COPY, result.describe()
    assert pool.reused == 0  # the producer stayed alive: its block was never handed back


CONFTEST = """
from hypothesis import Phase, settings
from pytest_gpucheck.interop import converter
from interop_broken_converters import BROKEN, honest

# The suite's anchor cases (one per layout, run first) and no shrinking: each
# broken converter fails on the first case that exposes it, deterministically.
settings.register_profile("interop-proof", max_examples=2, deadline=None,
                          derandomize=True, phases=(Phase.explicit, Phase.generate))
settings.load_profile("interop-proof")

NUMPY_DTYPES = ("bool", "int8", "int64", "uint8", "float16", "float32", "float64",
                "complex128")
converter(producer="numpy", consumer="numpy", name="honest", dtypes=NUMPY_DTYPES)(honest)
for name, func in BROKEN.items():
    converter(producer="numpy", consumer="numpy", name=name, dtypes=NUMPY_DTYPES)(func)
"""


@pytest.mark.slow
def test_suite_rejects_every_broken_converter(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert(Path(__file__).parents[1])
    report = pytester.path / "report.json"
    profile = settings.get_current_profile_name()
    try:
        result = pytester.runpytest("--pyargs", "pytest_gpucheck.conformance.test_interop",
                                    "-k", "user", "--gpu-backends=numpy", f"--gpu-report={report}")
    finally:  # the conftest loads a profile of its own, in this very process
        settings.load_profile(profile)
    # test_exchange and test_lifetime for each of the six user converters
    outcomes = result.parseoutcomes()
    lines = result.stdout.lines
    for name in BROKEN:
        failed = [line for line in lines if line.startswith("FAILED") and f"user:{name}-" in line]
        assert failed, f"{name} was not rejected:\n" + "\n".join(lines[-40:])
    assert not [line for line in lines if line.startswith("FAILED") and "user:honest-" in line]
    assert outcomes["passed"] >= 2  # honest: exchange and lifetime
    for message in ("copies although it claims zero-copy", "strides changed on shared memory",
                    "dtype changed", "read-only lost", "does not keep the producer alive",
                    "gpucheck interop pair matrix"):
        result.stdout.fnmatch_lines([f"*{message}*"])
    section = json.loads(report.read_text())["sections"]["interop"]
    cells = {(c["protocol"], c["producer"], c["consumer"]): c for c in section["cells"]}
    assert cells[("user:honest", "numpy", "numpy")]["summary"] == "zero-copy"
    assert cells[("user:copies", "numpy", "numpy")]["summary"] == "WRONG"


def test_documented_table_flags_a_library_that_changed() -> None:
    """A refusal that matches no documented entry fails (here: numpy refusing float64)."""
    from pytest_gpucheck.interop.converters import library_converter
    from pytest_gpucheck.interop.outcomes import Exchange

    case = Case("float64", (3,))
    converter = library_converter("dlpack", "numpy", "numpy")
    invented = Exchange(Outcome.REFUSES, NUMPY.facts(np.zeros(3)),
                        error=BufferError("no float64 today"))
    verdict = judge(case, invented, converter)
    assert verdict.kind == "fail"
    assert "undocumented refusal" in verdict.message
    copied = Exchange(Outcome.COPIES, NUMPY.facts(np.zeros(3)))
    assert "undocumented copy" in judge(case, copied, converter).message


@pytest.mark.slow
def test_freed_torch_producer_is_detected_too() -> None:
    """The same flaw behind PyTorch's CPU allocator, which also hands freed blocks back."""
    pytest.importorskip("torch")
    import ctypes

    def frees_tensor(tensor: object) -> np.ndarray:
        nbytes = tensor.numel() * tensor.element_size()  # type: ignore[attr-defined]
        raw = (ctypes.c_char * nbytes).from_address(tensor.data_ptr())  # type: ignore[attr-defined]
        return np.frombuffer(raw, dtype=np.float64).reshape(tuple(tensor.shape))  # type: ignore[attr-defined]

    torch_cpu = get_adapter(get_backend("torch-cpu"))
    converter = Converter("torch-cpu", "numpy", "custom", name="frees_tensor", origin="user",
                          expectation="zero-copy", func=frees_tensor)
    result = check_lifetime(Case("float64", (8, 8)), torch_cpu, NUMPY, converter)
    assert result.outcome is Outcome.WRONG
    assert "does not keep the producer alive" in result.problems[-1]
