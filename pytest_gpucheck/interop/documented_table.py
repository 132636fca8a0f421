"""The interop table: every documented copy, refusal and known defect, each with its
source, framework and the versions it was seen with (the entries' fields:
:class:`~pytest_gpucheck.interop.documented_entry.Documented`).  Data only:
:mod:`.documented` judges exchanges by it.
"""

from __future__ import annotations

from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.documented_entry import (
    Documented,
    Trigger,
    empty,
    is_bfloat16,
    non_compact,
    non_standard_dtype,
    producer_readonly,
    unaligned_64,
)
from pytest_gpucheck.interop.outcomes import Outcome

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
