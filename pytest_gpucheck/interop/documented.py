"""Documented behaviours: when a copy or a refusal is what a library promises.

The suite measures every exchange; this table only decides whether a
measured copy or refusal is acceptable, and names the known upstream defects
(measured "wrong" outcomes, and refusals that are bugs, which the suite
reports as expected failures with the upstream link).  Each entry cites its
source, the framework versions it was seen with, and carries a trigger: a
concrete exchange that must still reproduce it.  When it stops reproducing,
``test_documented_behaviour_reproduces`` says "changed in <framework> <installed
version>" (a skip) where the change is one a user welcomes (a refusal that now
works, a copy that is now zero-copy), and fails naming the versions otherwise.

A behaviour of some releases only names them: ``since`` the first release of
``framework`` that behaves so, ``before`` the first that no longer does.  Outside
them the entry explains nothing (the same outcome there is a failure) and its
trigger is not run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from pytest_gpucheck.backends.array_facts import is_compact
from pytest_gpucheck.backends.base import first_installed_version
from pytest_gpucheck.backends.dtypes import DtypeUnavailable, numpy_dtype
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

if TYPE_CHECKING:
    from pytest_gpucheck.interop.converters import Converter

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


def non_standard_dtype(case: Case, result: Exchange) -> bool:
    """A dtype the array API standard does not name (float16, bfloat16)."""
    return case.dtype in ("float16", "bfloat16")


def empty(case: Case, result: Exchange) -> bool:
    """The producer's array holds no element (its CAI data pointer is 0)."""
    return result.producer is not None and result.producer.size == 0


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
    #: A known upstream defect: matching items are expected failures (xfail) naming
    #: ``source``.  WRONG entries always are; a REFUSES entry is one when the refusal
    #: is a bug (JAX's copy=True on CUDA), not a documented limit.
    defect: bool = False
    #: The distribution whose behaviour this is (its installed version is named
    #: when the trigger stops reproducing).
    framework: str = ""
    #: "distribution version" pairs this behaviour was measured with.
    seen: tuple[str, ...] = ()
    #: The first release of ``framework`` that behaves so ("0.7.0"); empty: every one.
    since: str = ""
    #: The first release of ``framework`` that no longer behaves so ("2.9"); empty: none.
    before: str = ""

    @property
    def known_defect(self) -> bool:
        """True when matching items are expected failures rather than passes."""
        return self.defect or self.outcome is Outcome.WRONG

    def applies(self) -> bool:
        """False when ``framework``'s installed release is before ``since``, or ``before``
        or later."""
        if not (self.since or self.before):
            return True
        installed = installed_version(self.framework)
        if installed is None:
            return False
        now = release(installed.split()[1])
        return ((not self.since or now >= release(self.since))
                and (not self.before or now < release(self.before)))

    @property
    def releases(self) -> str:
        """The releases this behaviour is one of, in words."""
        if self.since and self.before:
            return f"{self.framework} {self.since} to before {self.before}"
        if self.since:
            return f"{self.framework} {self.since} and later"
        if self.before:
            return f"{self.framework} before {self.before}"
        return f"every {self.framework} release"

    def matches(self, case: Case, result: Exchange, converter: Converter) -> bool:
        """True when this entry explains ``result`` of ``converter`` on ``case``."""
        if result.outcome is not self.outcome or converter.origin != "library":
            return False
        if converter.protocol not in self.protocols:
            return False
        if not (fnmatchcase(converter.producer, self.producers)
                and fnmatchcase(converter.consumer, self.consumers)):
            return False
        # After the cheap tests: it reads the framework's package metadata.
        if not self.applies():
            return False
        if not self.when(case, result):
            return False
        if self.outcome is Outcome.REFUSES:
            return re.search(self.error, result.error_text) is not None
        return True


DLPACK = ("dlpack", "dlpack-nocopy", "dlpack-copy")

#: Versions the entries below were measured with: the CPU tier in CI, the CPU
#: tier under NumPy 2.5, and the first H100 run (docs/gpu-runs/2026-11-26-H100/).
CPU_TIER = ("numpy 2.4.6", "jax 0.10.2", "torch 2.13.0")
H100 = ("cupy-cuda13x 14.2.0", "jax 0.11.2", "torch 2.11.0", "cuda-core 1.2.0",
        "numba-cuda 0.30.4")

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
        framework="jax",
        seen=("jax 0.10.2", "jax 0.11.2"),
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
        framework="jax",
        seen=("jax 0.10.2", "jax 0.11.2"),
        # jax-ml/jax#29963 (jaxlib after 0.6.2) made copy=False refuse; before it, the
        # known defect jax-nocopy-copies-unaligned below.
        since="0.7.0",
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
        framework="jax",
        seen=("jax 0.10.2", "jax 0.11.2"),
    ),
    Documented(
        key="numpy-refuses-bfloat16-export",
        outcome=Outcome.REFUSES,
        summary="NumPy exports only its built-in integer, float and complex dtypes "
        "(an ml_dtypes bfloat16 array raises BufferError; NumPy 2.5 lets a package "
        "register more, ml_dtypes 0.6 does not)",
        source="https://numpy.org/doc/stable/reference/generated/numpy.ndarray.__dlpack__.html",
        protocols=DLPACK,
        producers="numpy",
        when=is_bfloat16,
        error=r"^BufferError: DLPack only supports",
        trigger=Trigger("numpy", "numpy", Case("bfloat16", (3,))),
        framework="numpy",
        seen=("numpy 2.4.6", "numpy 2.5.2", "ml_dtypes 0.6.0"),
    ),
    Documented(
        key="numpy-refuses-bfloat16-import",
        outcome=Outcome.REFUSES,
        summary="numpy.from_dlpack has no bfloat16 (RuntimeError: Unsupported dtype; "
        "BufferError since NumPy 2.5, numpy/numpy#31000)",
        source="https://github.com/numpy/numpy/pull/31000",
        protocols=DLPACK,
        consumers="numpy",
        when=is_bfloat16,
        error=r"^(RuntimeError|BufferError): Unsupported dtype",
        trigger=Trigger("torch-cpu", "numpy", Case("bfloat16", (3,))),
        framework="numpy",
        seen=("numpy 2.4.6", "numpy 2.5.2", "ml_dtypes 0.6.0"),
    ),
    Documented(
        key="numpy-refuses-readonly-to-unversioned",
        outcome=Outcome.REFUSES,
        summary="NumPy refuses to export a read-only array to a consumer that asks for an "
        "unversioned (pre-1.0) capsule, which cannot carry the read-only flag; JAX asks "
        "for one, and so does PyTorch before 2.9 (its from_dlpack passes no max_version)",
        source="https://github.com/numpy/numpy/pull/28600",
        protocols=DLPACK,
        producers="numpy",
        # Whoever asks without max_version: the error names that case alone.
        consumers="*",
        when=producer_readonly,
        error=r"^BufferError: Cannot export readonly array",
        trigger=Trigger("numpy", "jax-cpu", Case("float64", (3,), readonly=True)),
        framework="numpy",
        seen=("numpy 2.4.6", "numpy 2.5.2", "jax 0.10.2", "numpy 2.1.0", "jax 0.5.1",
              "torch 2.3.0"),
    ),
    Documented(
        key="cuda-core-refuses-cai-v2",
        outcome=Outcome.REFUSES,
        summary="cuda.core's StridedMemoryView imports only CUDA Array Interface v3; JAX "
        "exports v2 (BufferError: only CUDA Array Interface v3 or above is supported). "
        "PyTorch exports v2 too, but cuda.core >= 1.2 reads a torch.Tensor through its "
        "AOTI tensor bridge whatever the protocol, so torch-cuda -> cuda-python is "
        "zero-copy",
        source="https://github.com/NVIDIA/cuda-python/blob/main/cuda_core/cuda/core/"
        "_memoryview.pyx",
        protocols=("cai",),
        producers="jax-*",
        consumers="cuda-python",
        error=r"^BufferError: only CUDA Array Interface v3 or above is supported",
        trigger=Trigger("jax-gpu", "cuda-python", Case("float64", (3,)), "cai"),
        framework="cuda-core",
        seen=("cuda-core 1.2.0", "jax 0.11.2"),
    ),
    Documented(
        key="torch-refuses-readonly-cai",
        outcome=Outcome.REFUSES,
        summary="torch.as_tensor refuses a CUDA Array Interface whose data[1] says "
        "read-only (TypeError: the read only flag is not supported); JAX's CAI is always "
        "read-only, so no JAX array enters PyTorch this way",
        source="https://github.com/pytorch/pytorch/blob/main/torch/csrc/utils/"
        "tensor_numpy.cpp",
        protocols=("cai",),
        consumers="torch-*",
        when=producer_readonly,
        error=r"^TypeError: the read only flag is not supported",
        trigger=Trigger("jax-gpu", "torch-cuda", Case("float64", (3,)), "cai"),
        framework="torch",
        seen=("torch 2.11.0", "jax 0.11.2"),
    ),
    Documented(
        key="torch-refuses-cai-void",
        outcome=Outcome.REFUSES,
        summary="the CUDA Array Interface cannot name bfloat16 (producers write '<V2'); "
        "torch.as_tensor refuses that void typestr (TypeError: can't convert np.ndarray "
        "of type numpy.void)",
        source="https://github.com/pytorch/pytorch/blob/main/torch/csrc/utils/"
        "tensor_numpy.cpp",
        protocols=("cai",),
        consumers="torch-*",
        when=is_bfloat16,
        error=r"^TypeError: can't convert np\.ndarray of type numpy\.void",
        trigger=Trigger("cupy", "torch-cuda", Case("bfloat16", (3,)), "cai"),
        framework="torch",
        seen=("torch 2.11.0", "cupy-cuda13x 14.2.0"),
    ),
    Documented(
        key="cupy-refuses-null-cai",
        outcome=Outcome.REFUSES,
        summary="CuPy refuses a size-0 array whose CUDA Array Interface has data pointer 0, "
        "which the interface asks of size-0 arrays (RuntimeError: UnownedMemory requires "
        "explicit device ID for a null pointer)",
        source="https://github.com/cupy/cupy/blob/main/cupy/cuda/memory.pyx",
        protocols=("cai",),
        consumers="cupy",
        when=empty,
        error=r"^RuntimeError: UnownedMemory requires explicit device ID for a null pointer",
        trigger=Trigger("cuda-python", "cupy", Case("float64", (0,)), "cai"),
        framework="cupy",
        seen=("cupy-cuda13x 14.2.0",),
    ),
    Documented(
        key="cupy-refuses-device-copy",
        outcome=Outcome.REFUSES,
        summary="CuPy's __dlpack__(copy=True) refuses a copy on its own device "
        "(BufferError: copy=True only supported for copy to CPU); cupy.from_dlpack and "
        "torch.from_dlpack pass copy=True on to it",
        source="https://github.com/cupy/cupy/issues/9842",
        protocols=("dlpack-copy",),
        producers="cupy",
        error=r"^BufferError: copy=True only supported for copy to CPU",
        trigger=Trigger("cupy", "cupy", Case("float64", (3,)), "dlpack-copy"),
        framework="cupy",
        seen=("cupy-cuda13x 14.2.0", "torch 2.11.0"),
    ),
    Documented(
        key="torch-dlpack-no-copy-keywords",
        outcome=Outcome.REFUSES,
        summary="Tensor.__dlpack__ takes only `stream` before PyTorch 2.9 (DLPack 1.0's "
        "max_version, dl_device and copy came with it), so a consumer that asks for a "
        "copy or no copy (numpy.from_dlpack(t, copy=...)) gets TypeError: unexpected "
        "keyword argument",
        source="https://github.com/pytorch/pytorch/pull/150218",
        protocols=("dlpack-nocopy", "dlpack-copy"),
        producers="torch-*",
        error=r"^TypeError: .*__dlpack__\(\) got an unexpected keyword argument "
        r"'(dl_device|copy|max_version)'",
        trigger=Trigger("torch-cpu", "numpy", Case("float64", (3,)), "dlpack-copy"),
        framework="torch",
        seen=("torch 2.3.0", "numpy 2.1.0"),
        before="2.9",
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
        seen=CPU_TIER,
    ),
    # -- known upstream defects: reported as expected failures with the link --
    Documented(
        key="jax-gpu-copy-true-unimplemented",
        outcome=Outcome.REFUSES,
        defect=True,
        summary="jax.dlpack.from_dlpack(x, copy=True) of CUDA memory fails: jaxlib's "
        "MakePjrtBuffer hands the device pointer to BufferFromHostBuffer with "
        "kMutableZeroCopy, which the PJRT C API CUDA plugin rejects (UNIMPLEMENTED), "
        "and jax/_src/dlpack.py then skips its own copy",
        source="https://github.com/jax-ml/jax/blob/main/jaxlib/dlpack.cc",
        protocols=("dlpack-copy",),
        consumers="jax-gpu",
        error=r"^(JaxRuntimeError|XlaRuntimeError): UNIMPLEMENTED: PJRT C API does not "
        r"support HostBufferSemantics",
        trigger=Trigger("jax-gpu", "jax-gpu", Case("float64", (4,)), "dlpack-copy"),
        framework="jax",
        seen=("jax 0.11.2",),
    ),
    Documented(
        key="cai-cannot-name-bfloat16",
        outcome=Outcome.WRONG,
        summary="the CUDA Array Interface has no typestr for bfloat16: CuPy, PyTorch and "
        "cuda-python export '<V2', and consumers that build a NumPy dtype from it "
        "(cupy.asarray, numba.cuda.as_cuda_array, cuda.core) import a void16 array over "
        "the right bytes",
        source="https://numba.readthedocs.io/en/stable/cuda/cuda_array_interface.html",
        protocols=("cai",),
        when=is_bfloat16,
        problem="dtype changed: bfloat16 -> void16",
        trigger=Trigger("torch-cuda", "cupy", Case("bfloat16", (3,)), "cai"),
        framework="cupy",
        seen=H100,
    ),
    Documented(
        key="torch-ignores-readonly",
        outcome=Outcome.WRONG,
        summary="PyTorch has no read-only tensors: torch.from_dlpack imports read-only "
        "memory as a writable tensor (from a read-only NumPy array, from JAX, whose "
        "unversioned capsules cannot say read-only)",
        source="https://github.com/pytorch/pytorch/issues/44027",
        protocols=DLPACK,
        consumers="torch-*",
        when=producer_readonly,
        problem="read-only lost",
        # From JAX, whose arrays are all read-only: every supported torch imports its
        # capsule.  A read-only NumPy array reaches torch only from 2.9 on, which asks
        # for a versioned capsule; NumPy refuses older torch (the entry above).
        trigger=Trigger("jax-cpu", "torch-cpu", Case("float64", (3,))),
        framework="torch",
        seen=("torch 2.13.0", "torch 2.11.0", "numpy 2.4.6", "numpy 2.5.2", "torch 2.3.0",
              "jax 0.5.1"),
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
        framework="cupy",
        seen=("cupy-cuda13x 14.2.0", "jax 0.11.2"),
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
        framework="numba-cuda",
        seen=("numba-cuda 0.30.4", "jax 0.11.2"),
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
        framework="jax",
        seen=("jax 0.11.2", "cuda-core 1.2.0"),
        # JAX 0.12 (jaxlib extension 499) exports DLPack 1.0 capsules, read-only flag set:
        # measured here with jax 0.12.0.1 (jax/_src/dlpack.py, DLPACK_VERSION).
        before="0.12",
    ),
    Documented(
        key="jax-nocopy-copies-unaligned",
        outcome=Outcome.WRONG,
        summary="before JAX 0.7, jax.dlpack.from_dlpack(x, copy=False) copies a CPU buffer "
        "that is not 64-byte aligned (XLA's requirement) instead of refusing: the "
        "result does not share x's memory although no copy was allowed",
        source="https://github.com/jax-ml/jax/pull/29963",
        protocols=("dlpack-nocopy",),
        consumers="jax-cpu",
        when=unaligned_64,
        problem="copies although it claims zero-copy",
        trigger=Trigger("numpy", "jax-cpu", Case("float64", (9,), view=((1, 9, 1),)),
                        "dlpack-nocopy"),
        framework="jax",
        seen=("jax 0.5.1", "numpy 2.1.0"),
        before="0.7.0",
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
        framework="jax",
        seen=("jax 0.10.2", "torch 2.13.0"),
        # Came with jax-ml/jax#29963's copy handling: JAX 0.5.1 copies here.
        since="0.7.0",
    ),
    Documented(
        key="array-api-strict-refuses-non-standard-dtypes",
        outcome=Outcome.REFUSES,
        summary="array_api_strict.from_dlpack refuses a dtype outside the array API standard "
        "(float16, bfloat16): the standard names no such dtype, and array-api-strict "
        "implements the standard and nothing more",
        source="https://data-apis.org/array-api/latest/API_specification/data_types.html",
        protocols=DLPACK,
        consumers="array-api-strict",
        when=non_standard_dtype,
        # float16: array-api-strict's own check; bfloat16: NumPy's from_dlpack, which it
        # calls first, has none.
        error=r"^(TypeError: The array_api_strict namespace does not support the dtype|"
              r"(RuntimeError|BufferError): Unsupported dtype)",
        trigger=Trigger("numpy", "array-api-strict", Case("float16", (3,))),
        framework="array-api-strict",
        seen=("array-api-strict 2.6.1", "numpy 2.4.6", "torch 2.13.0"),
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
            return Verdict("known" if entry.known_defect else "ok", outcome, entry.summary,
                           entry)
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


#: Distributions a framework ships under (CuPy has one wheel per CUDA major version).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "cupy": ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"),
}


def installed_version(framework: str) -> str | None:
    """``"name version"`` of the installed distribution of ``framework`` (None: not installed).

    Read from the package metadata: nothing is imported.
    """
    return first_installed_version(*DISTRIBUTIONS.get(framework, (framework,))) or None


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: ``"2.3.0+cu121"`` -> ``(2, 3, 0)``."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match[0].split(".")) if match else ()


def prerequisite_problem(entry: Documented) -> str | None:
    """Why ``entry``'s trigger cannot even be built here (None when it can).

    The trigger's case needs its dtype: bfloat16 needs ml_dtypes, which a
    core-only install does not have.  That is a missing prerequisite, not a
    behaviour that changed.
    """
    if entry.trigger is None:
        return None
    try:
        numpy_dtype(entry.trigger.case.dtype)
    except DtypeUnavailable as exc:
        return str(exc)
    return None


#: How good an outcome is for a hand-over that may copy; higher is better.
_RANK = {Outcome.WRONG: 0, Outcome.REFUSES: 1, Outcome.COPIES: 2, Outcome.ZERO_COPY: 3,
         Outcome.EMPTY: 3}


@dataclass(frozen=True)
class Change:
    """A documented behaviour whose trigger no longer reproduces it."""

    welcome: bool  # the exchange now does better: report "changed in VERSION", not a failure
    message: str


def changed(entry: Documented, verdict: Verdict, result: Exchange) -> Change | None:
    """None when ``entry`` still explains its trigger's ``result``; else how it changed.

    Welcome: the suite now accepts the exchange without this entry and its
    outcome is better (a refusal that works, a copy that is zero-copy, a known
    defect gone).  Anything else (a new refusal, a new defect, another error)
    is not, and the message names the versions it was seen with and runs with.
    """
    if verdict.documented is not None and verdict.documented.key == entry.key:
        return None
    trigger = entry.trigger
    assert trigger is not None
    names = sorted({item.split()[0] for item in entry.seen} | {entry.framework} - {""})
    installed = ", ".join(v for v in (installed_version(n) for n in names) if v)
    where = f"{trigger.producer}->{trigger.consumer} via {trigger.protocol}"
    welcome = verdict.kind == "ok" and _RANK[verdict.outcome] > _RANK[entry.outcome]
    if welcome:
        # Every framework the entry names, not only its own: numpy's refusal to JAX's
        # unversioned requests stopped because JAX 0.12 asks for versioned capsules, and
        # "changed in numpy 2.5.5" alone sent the reader to the wrong changelog.
        return Change(True, (
            f"{entry.key} changed in {installed or 'an installed version'}: {where} is now "
            f"{verdict.outcome.value} (documented: {entry.outcome.value}; seen with "
            f"{', '.join(entry.seen)}); remove or narrow the entry in "
            "pytest_gpucheck/interop/documented.py"))
    return Change(False, (
        f"{entry.key} ({entry.summary}) no longer reproduces with {where}: measured "
        f"{verdict.kind}/{result.outcome.value}\n{result.describe()}\n"
        f"seen with: {', '.join(entry.seen) or 'no version recorded'}; installed: "
        f"{installed or 'none of those'}\n"
        "update pytest_gpucheck/interop/documented.py"))


def export_refusal(producer: str, protocol: str, error_text: str) -> Documented | None:
    """The documented refusal explaining a producer's own ``__dlpack__`` raising.

    ``protocol`` names what was asked (``dlpack-copy`` for ``copy=True``); only
    entries about the producer, for every case and consumer, can explain it.
    """
    for entry in DOCUMENTED:
        if (entry.outcome is Outcome.REFUSES and not entry.known_defect
                and entry.applies()
                and protocol in entry.protocols and entry.when is always
                and entry.consumers == "*" and fnmatchcase(producer, entry.producers)
                and re.search(entry.error, error_text)):
            return entry
    return None
