"""Documented behaviours: when a copy or a refusal is what a library promises.

The suite measures every exchange; this table only decides whether a
measured copy or refusal is acceptable, and names the known upstream defects
(measured "wrong" outcomes the suite reports as expected failures).  Each
entry cites its source and carries a trigger: a concrete exchange that must
still reproduce it, so a library that changes its behaviour makes
``test_documented_behaviour_reproduces`` fail and the table gets updated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from ..backends.array_facts import is_compact
from .cases import Case
from .outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from .converters import Converter

Condition = Callable[[Case, Exchange], bool]


def always(case: Case, result: Exchange) -> bool:
    return True


def unaligned_64(case: Case, result: Exchange) -> bool:
    """The producer's data pointer is not 64-byte aligned (XLA's CPU requirement)."""
    return result.producer is not None and result.producer.pointer % 64 != 0


def non_compact(case: Case, result: Exchange) -> bool:
    """The producer's layout has gaps (no axis permutation makes it contiguous)."""
    facts = result.producer
    return facts is not None and not is_compact(facts.shape, facts.strides,
                                                facts.dtype.itemsize)


def is_bfloat16(case: Case, result: Exchange) -> bool:
    return case.dtype == "bfloat16"


def producer_readonly(case: Case, result: Exchange) -> bool:
    return result.producer is not None and result.producer.readonly


@dataclass(frozen=True)
class Trigger:
    """An exchange that shows the behaviour (GPU ones reproduce where both sides run)."""

    producer: str
    consumer: str
    case: Case
    protocol: str = "dlpack"


@dataclass(frozen=True)
class Documented:
    """A behaviour a library documents (or a known defect), with its source."""

    key: str
    outcome: Outcome  # COPIES, REFUSES, or WRONG for a known defect
    summary: str
    source: str
    protocols: tuple[str, ...]
    trigger: Trigger | None
    producers: str = "*"
    consumers: str = "*"
    when: Condition = always
    error: str = ""  # regex matched against "ExceptionType: message" of a refusal
    problem: str = ""  # text every matching problem of a known defect contains

    def matches(self, case: Case, result: Exchange, converter: Converter) -> bool:
        """True when this entry explains ``result`` of ``converter`` on ``case``."""
        if result.outcome is not self.outcome or converter.origin != "library":
            return False
        if converter.protocol not in self.protocols:
            return False
        if not (fnmatchcase(converter.producer, self.producers)
                and fnmatchcase(converter.consumer, self.consumers)):
            return False
        if not self.when(case, result):
            return False
        if self.outcome is Outcome.REFUSES:
            return re.search(self.error, result.error_text) is not None
        return True


DLPACK = ("dlpack", "dlpack-nocopy", "dlpack-copy")

DOCUMENTED: tuple[Documented, ...] = (
    Documented(
        key="jax-copies-unaligned",
        outcome=Outcome.COPIES,
        summary="JAX copies a CPU buffer that is not 64-byte aligned (XLA's requirement)",
        source="https://github.com/jax-ml/jax/issues/29810",
        protocols=("dlpack",),
        consumers="jax-cpu",
        when=unaligned_64,
        trigger=Trigger("numpy", "jax-cpu", Case("float64", (9,), view=((1, 9, 1),))),
    ),
    Documented(
        key="jax-refuses-unaligned-nocopy",
        outcome=Outcome.REFUSES,
        summary="with copy=False JAX refuses an unaligned CPU buffer, raising ValueError "
        "(the array API asks for BufferError)",
        source="https://github.com/jax-ml/jax/issues/29810",
        protocols=("dlpack-nocopy",),
        consumers="jax-cpu",
        when=unaligned_64,
        error=r"^ValueError: .*not aligned",
        trigger=Trigger("numpy", "jax-cpu", Case("float64", (9,), view=((1, 9, 1),)),
                        "dlpack-nocopy"),
    ),
    Documented(
        key="jax-refuses-gaps",
        outcome=Outcome.REFUSES,
        summary="JAX imports only compact layouts (a transposition is fine, gaps are not)",
        source="https://github.com/jax-ml/jax/issues/4196",
        protocols=DLPACK,
        consumers="jax-*",
        when=non_compact,
        error=r"(JaxRuntimeError|XlaRuntimeError): UNIMPLEMENTED: .*compact",
        trigger=Trigger("numpy", "jax-cpu",
                        Case("float64", (4, 5), view=((0, 4, 1), (0, 5, 2)))),
    ),
    Documented(
        key="numpy-refuses-bfloat16-export",
        outcome=Outcome.REFUSES,
        summary="NumPy exports only its built-in integer, float and complex dtypes "
        "(an ml_dtypes bfloat16 array raises BufferError)",
        source="https://numpy.org/doc/stable/reference/generated/numpy.ndarray.__dlpack__.html",
        protocols=DLPACK,
        producers="numpy",
        when=is_bfloat16,
        error=r"^BufferError: DLPack only supports",
        trigger=Trigger("numpy", "numpy", Case("bfloat16", (3,))),
    ),
    Documented(
        key="numpy-refuses-bfloat16-import",
        outcome=Outcome.REFUSES,
        summary="numpy.from_dlpack has no bfloat16 (RuntimeError: Unsupported dtype)",
        source="https://numpy.org/doc/stable/reference/generated/numpy.from_dlpack.html",
        protocols=DLPACK,
        consumers="numpy",
        when=is_bfloat16,
        error=r"^RuntimeError: Unsupported dtype",
        trigger=Trigger("torch-cpu", "numpy", Case("bfloat16", (3,))),
    ),
    Documented(
        key="numpy-refuses-readonly-to-unversioned",
        outcome=Outcome.REFUSES,
        summary="NumPy refuses to export a read-only array to a consumer that asks for an "
        "unversioned (pre-1.0) capsule, which cannot carry the read-only flag; JAX asks "
        "for one",
        source="https://github.com/numpy/numpy/pull/28600",
        protocols=DLPACK,
        producers="numpy",
        consumers="jax-*",
        when=producer_readonly,
        error=r"^BufferError: Cannot export readonly array",
        trigger=Trigger("numpy", "jax-cpu", Case("float64", (3,), readonly=True)),
    ),
    Documented(
        key="cuda-core-refuses-cai-v2",
        outcome=Outcome.REFUSES,
        summary="cuda.core's StridedMemoryView imports only CUDA Array Interface v3; PyTorch "
        "and JAX export v2 (BufferError: only CUDA Array Interface v3 or above is supported)",
        source="https://github.com/NVIDIA/cuda-python/blob/main/cuda_core/cuda/core/"
        "_memoryview.pyx",
        protocols=("cai",),
        consumers="cuda-python",
        error=r"^BufferError: only CUDA Array Interface v3 or above is supported",
        trigger=Trigger("torch-cuda", "cuda-python", Case("float64", (3,)), "cai"),
    ),
    Documented(
        key="dlpack-nocopy-buffererror",
        outcome=Outcome.REFUSES,
        summary="from_dlpack(copy=False) raises BufferError when only a copy would do "
        "(array API standard)",
        source="https://data-apis.org/array-api/latest/API_specification/generated/"
        "array_api.from_dlpack.html",
        protocols=("dlpack-nocopy",),
        error=r"^BufferError: ",
        trigger=None,
    ),
    # -- known upstream defects: measured as wrong, reported as expected failures --
    Documented(
        key="torch-ignores-readonly",
        outcome=Outcome.WRONG,
        summary="PyTorch has no read-only tensors: it imports read-only memory as a writable "
        "tensor (from a read-only NumPy array, from JAX, whose unversioned capsules "
        "cannot say read-only, and through torch.as_tensor from a CUDA Array Interface "
        "whose data[1] says read-only)",
        source="https://github.com/pytorch/pytorch/issues/44027",
        protocols=(*DLPACK, "cai"),
        consumers="torch-*",
        when=producer_readonly,
        problem="read-only lost",
        trigger=Trigger("numpy", "torch-cpu", Case("float64", (3,), readonly=True)),
    ),
    Documented(
        key="cupy-ignores-readonly",
        outcome=Outcome.WRONG,
        summary="CuPy has no read-only arrays: cupy.from_dlpack imports a read-only capsule "
        "as writable (its read-only check in dlpack.pyx is commented out) and cupy.asarray "
        "ignores the read-only flag of a CUDA Array Interface",
        source="https://github.com/cupy/cupy/blob/v14.2.0/cupy/_core/dlpack.pyx",
        protocols=(*DLPACK, "cai"),
        consumers="cupy",
        when=producer_readonly,
        problem="read-only lost",
        trigger=Trigger("jax-gpu", "cupy", Case("float64", (3,))),
    ),
    Documented(
        key="numba-cuda-cai-ignores-readonly",
        outcome=Outcome.WRONG,
        summary="numba.cuda.as_cuda_array makes a writable DeviceNDArray of read-only memory "
        "(from_cuda_array_interface reads only data[0], never the read-only flag data[1])",
        source="https://github.com/NVIDIA/numba-cuda/blob/main/numba_cuda/numba/cuda/api.py",
        protocols=("cai",),
        consumers="numba-cuda",
        when=producer_readonly,
        problem="read-only lost",
        trigger=Trigger("cuda-python", "numba-cuda", Case("float64", (3,), readonly=True),
                        "cai"),
    ),
    Documented(
        key="cuda-core-legacy-capsule-writable",
        outcome=Outcome.WRONG,
        summary="JAX exports unversioned (pre-1.0) DLPack capsules, which have no read-only "
        "flag, so cuda.core's StridedMemoryView of a JAX array says writable",
        source="https://github.com/jax-ml/jax/blob/main/jax/_src/dlpack.py",
        protocols=DLPACK,
        producers="jax-*",
        consumers="cuda-python",
        when=producer_readonly,
        problem="read-only lost",
        trigger=Trigger("jax-gpu", "cuda-python", Case("float64", (3,))),
    ),
    Documented(
        key="jax-copy-true-aliases",
        outcome=Outcome.WRONG,
        summary="jax.dlpack.from_dlpack(x, copy=True) shares x's memory on the CPU when x is "
        "aligned and compact, although its docstring says copy=True always copies",
        source="https://github.com/jax-ml/jax/pull/29963",
        protocols=("dlpack-copy",),
        consumers="jax-cpu",
        problem="shares memory although a copy was requested",
        trigger=Trigger("torch-cpu", "jax-cpu", Case("float64", (4,)), "dlpack-copy"),
    ),
)


@dataclass(frozen=True)
class Verdict:
    """The suite's judgement of one exchange."""

    kind: str  # "ok", "known" (a known defect), "not available" or "fail"
    outcome: Outcome
    message: str = ""
    documented: Documented | None = None


def judge(case: Case, result: Exchange, converter: Converter) -> Verdict:
    """Accept zero-copy, documented copies/refusals and known defects; fail everything else."""
    outcome = result.outcome
    if outcome is Outcome.NOT_AVAILABLE:
        return Verdict("not available", outcome, result.reason)
    if outcome in (Outcome.ZERO_COPY, Outcome.EMPTY):
        return Verdict("ok", outcome)
    if outcome is Outcome.COPIES and converter.expectation == "copy":
        return Verdict("ok", outcome)
    if outcome is Outcome.WRONG:
        entry = _known_defect(case, result, converter)
        if entry is not None:
            return Verdict("known", outcome, entry.summary, entry)
        return Verdict("fail", outcome, _message(case, result, converter, "wrong"))
    for entry in DOCUMENTED:
        if entry.matches(case, result, converter):
            return Verdict("ok", outcome, entry.summary, entry)
    what = "undocumented copy" if outcome is Outcome.COPIES else "undocumented refusal"
    if converter.origin == "user":
        what = "the converter raised" if outcome is Outcome.REFUSES else what
    return Verdict("fail", outcome, _message(case, result, converter, what))


def _known_defect(case: Case, result: Exchange, converter: Converter) -> Documented | None:
    entries = [e for e in DOCUMENTED if e.matches(case, result, converter)]
    if result.problems and entries and all(
        any(entry.problem in problem for entry in entries) for problem in result.problems
    ):
        return entries[0]
    return None


def _message(case: Case, result: Exchange, converter: Converter, what: str) -> str:
    return (f"{converter.producer}->{converter.consumer} via {converter.id}: {what}\n"
            f"case: {case!r}\n{result.describe()}")
