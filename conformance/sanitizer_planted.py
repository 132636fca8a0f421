# Kernel bodies are device code: ``cuda.grid`` and friends are compiler intrinsics whose
# host-side Python stubs do not describe their device types (as in _numba_cuda_kernels.py).
# mypy: disable-error-code="call-arg, var-annotated, operator, index"
"""Planted bugs only compute-sanitizer sees, each with its correct twin (numba-cuda, CuPy).

Not a suite of ``--gpu-conformance`` (the name has no ``test_`` prefix): run it
by path, under the sanitizer, where a GPU is::

    planted=$(python -c \\
        'import pytest_gpucheck.conformance.sanitizer_planted as m; print(m.__file__)')
    pytest --gpu-sanitize=memcheck,racecheck,initcheck,synccheck \\
        --gpu-backends=numba-cuda,cupy "$planted"

Each bug's test is expected to FAIL with its tool's report in the ``gpucheck
sanitizer`` section, and its twin to pass; a bug's result is right either way
(the out-of-bounds read lands in the allocation's slack, the race resolves well,
the uninitialised read returns whatever the allocation held, the divergent barrier completes),
which is why guard bands and references cannot catch them.  Under a tool that
does not look for a bug's class, that bug's test is skipped with the reason.
Without ``--gpu-sanitize`` every test is skipped; on a backend other than
numba-cuda or CuPy too (the CPU tier reaches these tests only through the test
hook :func:`pytest_gpucheck.sanitizer.plugin.sanitize_cpu_backend_for_tests`, where
:func:`pytest_gpucheck.sanitizer.plugin.planted_bug` stands for the kernel).

Never run on a GPU here: written against numba-cuda 0.30's ``cuda.jit`` /
``cuda.shared.array`` / ``cuda.syncthreads`` and CuPy's ``RawKernel``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.sanitizer.plugin import planted_bug, sanitized_tool

N = 1000  # 4000 bytes: cudaMalloc rounds it up, so x[N] is in the allocation's slack
BLOCK = 64

#: case -> (the tool that must report the bug, what the bug is)
CASES = {
    "oob-read-in-slack": ("memcheck", "reads x[i + 1] for i = n - 1, one element past the "
                          "array, inside the allocation's rounding slack"),
    "shared-race-reduction": ("racecheck", "a block reduction with no barrier between "
                              "filling shared memory and the first reads of it"),
    # initcheck watches global memory only (NVIDIA's documentation; an uninitialised
    # shared read passed it on an H200, 2026-11-27): the bug reads a fresh allocation.
    "uninitialised-global-read": ("initcheck", "reads a freshly allocated array that "
                                  "nothing wrote (the twin's array is written first)"),
    "syncthreads-in-branch": ("synccheck", "__syncthreads() inside a branch on the thread "
                              "index (half a warp reaches it)"),
}


# -- numba-cuda --------------------------------------------------------------------------------
@functools.cache
def _numba_kernels() -> dict[tuple[str, bool], Callable[..., Any]]:
    from numba import cuda, float32

    @cuda.jit
    def neighbour_sum(x: Any, out: Any, n: int, bug: bool) -> None:
        i = cuda.grid(1)
        if i < n:
            right = x[i + 1] if (bug or i + 1 < n) else float32(0)
            out[i] = x[i] + right

    @cuda.jit
    def block_sum(x: Any, out: Any, n: int, bug: bool) -> None:
        s = cuda.shared.array(BLOCK, float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < n else float32(0)
        if not bug:
            cuda.syncthreads()
        stride = BLOCK // 2
        while stride > 0:
            if t < stride:
                s[t] += s[t + stride]
            cuda.syncthreads()
            stride //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    @cuda.jit
    def scaled(x: Any, out: Any, n: int, bug: bool) -> None:
        i = cuda.grid(1)
        if i < n:
            out[i] = float32(2) * x[i]

    @cuda.jit
    def divergent(out: Any, bug: bool) -> None:
        t = cuda.threadIdx.x
        if not bug or t < 16:
            cuda.syncthreads()
        out[t] = t

    return {(name, bug): kernel for bug in (True, False) for name, kernel in (
        ("oob-read-in-slack", neighbour_sum), ("shared-race-reduction", block_sum),
        ("uninitialised-global-read", scaled), ("syncthreads-in-branch", divergent))}


def _run_numba(case: str, bug: bool) -> None:
    from numba import cuda

    kernel = _numba_kernels()[(case, bug)]
    x = cuda.to_device(np.arange(N, dtype=np.float32))
    if case == "uninitialised-global-read" and bug:
        x = cuda.device_array(N, np.float32)  # allocated, never written
    blocks = (N + BLOCK - 1) // BLOCK
    if case == "syncthreads-in-branch":
        kernel[1, 32](cuda.device_array(32, np.float32), bug)
    elif case == "shared-race-reduction":
        kernel[blocks, BLOCK](x, cuda.device_array(blocks, np.float32), N, bug)
    else:
        kernel[blocks, BLOCK](x, cuda.device_array(N, np.float32), N, bug)
    cuda.synchronize()


# -- CuPy ----------------------------------------------------------------------------------------
CUDA_C = r"""
#define BLOCK 64
extern "C" __global__ void neighbour_sum(const float* x, float* out, int n, int bug) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + ((bug || i + 1 < n) ? x[i + 1] : 0.0f);
}
extern "C" __global__ void block_sum(const float* x, float* out, int n, int bug) {
    __shared__ float s[BLOCK];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0.0f;
    if (!bug) __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void scaled(const float* x, float* out, int n, int bug) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i];
}
extern "C" __global__ void divergent(float* out, int bug) {
    int t = threadIdx.x;
    if (!bug || t < 16) __syncthreads();
    out[t] = t;
}
"""
CUPY_NAMES = {"oob-read-in-slack": "neighbour_sum", "shared-race-reduction": "block_sum",
              "uninitialised-global-read": "scaled", "syncthreads-in-branch": "divergent"}


@functools.cache
def _cupy_module() -> Any:
    import cupy  # type: ignore[import-not-found, unused-ignore]

    return cupy.RawModule(code=CUDA_C)


def _run_cupy(case: str, bug: bool) -> None:
    import cupy  # type: ignore[import-not-found, unused-ignore]

    kernel = _cupy_module().get_function(CUPY_NAMES[case])
    flag = np.int32(bug)
    x = cupy.arange(N, dtype=cupy.float32)
    if case == "uninitialised-global-read" and bug:
        x = cupy.empty(N, dtype=cupy.float32)  # allocated (no pool here), never written
    blocks = (N + BLOCK - 1) // BLOCK
    if case == "syncthreads-in-branch":
        kernel((1,), (32,), (cupy.empty(32, cupy.float32), flag))
    elif case == "shared-race-reduction":
        kernel((blocks,), (BLOCK,), (x, cupy.empty(blocks, cupy.float32), np.int32(N), flag))
    else:
        kernel((blocks,), (BLOCK,), (x, cupy.empty(N, cupy.float32), np.int32(N), flag))
    cupy.cuda.runtime.deviceSynchronize()


RUNNERS = {"numba-cuda": _run_numba, "cupy": _run_cupy}


@pytest.mark.parametrize("variant", ["bug", "twin"])
@pytest.mark.parametrize("case", list(CASES))
def test_planted(gpu_backend: Any, case: str, variant: str) -> None:
    """The bug fails under its tool with the sanitizer's report; the twin passes."""
    tool, what = CASES[case]
    running = sanitized_tool()
    if running is None:
        pytest.skip("planted sanitizer bugs run only in a --gpu-sanitize worker")
    if variant == "bug" and running != tool:
        pytest.skip(f"{tool} reports this bug ({what}); this worker runs {running}")
    runner = RUNNERS.get(gpu_backend.name)
    if runner is not None:
        runner(case, variant == "bug")
    elif not planted_bug(tool, case, bug=variant == "bug"):
        pytest.skip(f"the planted kernels are numba-cuda and CuPy kernels, not "
                    f"{gpu_backend.name}")
