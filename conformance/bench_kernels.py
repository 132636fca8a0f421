"""Bundled benchmarks of the conformance kernels on every selected backend.

Streaming (``copy``, ``vector_add``, ``saxpy``), a reduction (``sum``), a
stencil (``laplacian_2d``) and ``matmul``, each timed by ``gpu_benchmark``
with its bytes and flops declared, so the report gives GB/s, GFLOP/s and the
fraction of the device's measured copy ceiling.  Run them with::

    pytest conformance/bench_kernels.py --gpu-backends=all --benchmark-only \
        --gpu-bench-save            # record a baseline
    pytest conformance/bench_kernels.py --gpu-backends=all --benchmark-only \
        --gpu-bench-compare         # gate against it

Sizes are large enough to be meaningful on a GPU and small on the CPU tier
(tiny on the CUDA simulator, which runs one Python thread per CUDA thread).
Each implementation's result is checked against the NumPy reference before
it is timed: a fast wrong kernel is not a result.  The implementation timed
is the backend's bundled one unless ``--gpu-impls=user`` asks for the user's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pytest_gpucheck.backends.base import Backend
from pytest_gpucheck.bench.device_copy import device_copy
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.conformance.specs import spec_for
from pytest_gpucheck.reference_kernels import KERNELS
from pytest_gpucheck.registry import Implementation, implementations

#: Problem sizes per tier: elements of a streaming vector, side of a square grid/matrix.
SIZES = {
    "gpu": {"stream": 1 << 25, "reduce": 1 << 25, "stencil": 4096, "matmul": 2048},
    # 16 MiB vectors: past the last-level cache, like the copy ceiling (32 MiB).
    "cpu": {"stream": 1 << 22, "reduce": 1 << 22, "stencil": 1024, "matmul": 128},
    "simulator": {"stream": 256, "reduce": 256, "stencil": 16, "matmul": 8},
}
F32 = np.dtype(np.float32)


def sizes(backend: Backend) -> dict[str, int]:
    """The size table of ``backend``'s tier."""
    if backend.is_simulator:
        return SIZES["simulator"]
    return SIZES["gpu" if backend.is_gpu else "cpu"]


def pick_implementation(kernel: str, backend: Backend, config: pytest.Config) -> Implementation:
    """The implementation to time: bundled first, or the user's with ``--gpu-impls=user``."""
    origin = config.getoption("gpu_impls", "all")
    found = implementations(kernel=kernel, backend=backend.name,
                            origin=None if origin == "all" else origin)
    if not found:
        pytest.skip(f"no implementation of {kernel} registered for {backend.name} "
                    f"(--gpu-impls={origin})")
    return sorted(found, key=lambda impl: (impl.origin != "bundled", impl.name))[0]


def launch_for(shape: tuple[int, ...], backend: Backend) -> LaunchConfig:
    """One thread per output element, x along the last axis."""
    small = backend.is_simulator
    if len(shape) == 1:
        block = 32 if small else 256
        return LaunchConfig(grid=(max(math.ceil(shape[0] / block), 1),), block=(block,))
    side = 8 if small else 16
    return LaunchConfig(grid=(math.ceil(shape[1] / side), math.ceil(shape[0] / side)),
                        block=(side, side))


def prepared_call(impl: Implementation, backend: Backend, inputs: dict[str, Any],
                  out_shape: tuple[int, ...], out_init: Any = np.nan) -> tuple[Any, Any]:
    """Device inputs bound to ``impl``: returns ``(call, read_result)``."""
    args = [backend.to_device(value) if isinstance(value, np.ndarray) else value
            for value in inputs.values()]
    kwargs: dict[str, Any] = {}
    out = None
    if impl.writes_out:
        out = backend.to_device(np.full(out_shape, out_init, dtype=F32))
        kwargs["out"] = out
    if impl.takes_launch:
        kwargs["launch"] = launch_for(out_shape, backend)
    holder: dict[str, Any] = {}

    def call() -> Any:
        result = impl.func(*args, **kwargs)
        holder["result"] = out if impl.writes_out else result
        return holder["result"]

    def read() -> np.ndarray:
        return backend.to_host(holder["result"])

    return call, read


def check_then_time(gpu_benchmark: Any, gpu_backend: Backend, request: pytest.FixtureRequest,
                    kernel: str, inputs: dict[str, Any], out_shape: tuple[int, ...], *,
                    bytes_moved: int, flops: int, rtol: float) -> None:
    """Check one call of the implementation against the reference, then benchmark it.
    ``out`` starts as the kernel's catalog entry says (poison, or a reduction's identity)."""
    impl = pick_implementation(kernel, gpu_backend, request.config)
    out_init = spec_for(kernel).initial_output(F32)
    expected = np.asarray(KERNELS[kernel](*inputs.values()))
    check_call, read = prepared_call(impl, gpu_backend, inputs, out_shape, out_init)
    check_call()
    np.testing.assert_allclose(read(), expected, rtol=rtol, atol=rtol * float(
        np.abs(expected).max(initial=1.0)), err_msg=f"{kernel} on {impl.id} is wrong; "
        "not benchmarking it")
    # Reductions accumulate into out: time a separate binding, not the checked one.
    call, _ = prepared_call(impl, gpu_backend, inputs, out_shape, out_init)
    gpu_benchmark.extra = {"implementation": impl.id}
    gpu_benchmark.pedantic(call, bytes=bytes_moved, flops=flops)


def _vector(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def test_copy(gpu_benchmark: Any, gpu_backend: Backend) -> None:
    """Device-to-device copy with the framework's own copy: the streaming ceiling."""
    n = sizes(gpu_backend)["stream"]
    host = _vector(n, 0)
    src = gpu_backend.to_device(host)
    dst = gpu_backend.empty((n,), F32)
    result = gpu_benchmark.pedantic(lambda: device_copy(gpu_backend, src, dst),
                                    bytes=2 * host.nbytes, flops=0)
    np.testing.assert_array_equal(gpu_backend.to_host(result), host)


def test_vector_add(gpu_benchmark: Any, gpu_backend: Backend,
                    request: pytest.FixtureRequest) -> None:
    """``out = a + b``: reads two vectors, writes one."""
    n = sizes(gpu_backend)["stream"]
    inputs = {"a": _vector(n, 1), "b": _vector(n, 2)}
    check_then_time(gpu_benchmark, gpu_backend, request, "vector_add", inputs, (n,),
                    bytes_moved=3 * n * F32.itemsize, flops=n, rtol=1e-6)


def test_saxpy(gpu_benchmark: Any, gpu_backend: Backend, request: pytest.FixtureRequest) -> None:
    """``out = alpha * x + y``: two flops per element."""
    n = sizes(gpu_backend)["stream"]
    inputs = {"alpha": np.float32(2.5), "x": _vector(n, 3), "y": _vector(n, 4)}
    check_then_time(gpu_benchmark, gpu_backend, request, "saxpy", inputs, (n,),
                    bytes_moved=3 * n * F32.itemsize, flops=2 * n, rtol=1e-5)


def test_sum(gpu_benchmark: Any, gpu_backend: Backend, request: pytest.FixtureRequest) -> None:
    """``out[0] = sum(x)``: reads the vector once."""
    n = sizes(gpu_backend)["reduce"]
    inputs = {"x": _vector(n, 5)}
    check_then_time(gpu_benchmark, gpu_backend, request, "sum", inputs, (1,),
                    bytes_moved=n * F32.itemsize, flops=n, rtol=1e-4)


def test_laplacian_2d(gpu_benchmark: Any, gpu_backend: Backend,
                      request: pytest.FixtureRequest) -> None:
    """Five-point Laplacian: one read and one write per point if the halo stays in cache."""
    side = sizes(gpu_backend)["stencil"]
    inputs = {"u": np.random.default_rng(6).random((side, side), dtype=np.float32)}
    check_then_time(gpu_benchmark, gpu_backend, request, "laplacian_2d", inputs, (side, side),
                    bytes_moved=2 * side * side * F32.itemsize, flops=6 * side * side,
                    rtol=1e-5)


def test_matmul(gpu_benchmark: Any, gpu_backend: Backend, request: pytest.FixtureRequest) -> None:
    """``out = a @ b`` on square float32 matrices: 2 n^3 flops."""
    n = sizes(gpu_backend)["matmul"]
    rng = np.random.default_rng(7)
    inputs = {"a": rng.random((n, n), dtype=np.float32), "b": rng.random((n, n),
                                                                         dtype=np.float32)}
    check_then_time(gpu_benchmark, gpu_backend, request, "matmul", inputs, (n, n),
                    bytes_moved=3 * n * n * F32.itemsize, flops=2 * n**3, rtol=1e-4)
