"""The bundled CuPy and cuda-python implementations (GPU tier) and their CUDA C.

On a machine where ``cupy`` / ``cuda-python`` probe available, every bundled
implementation is called directly against the NumPy references (as the CPU
tier does for JAX and torch); elsewhere those tests skip with the probe's
reason.  What runs everywhere:

* both modules (and the JAX/torch ones) import without importing any framework;
* every CUDA C source compiles, for every dtype it is used with: with ``nvcc``
  when it is on PATH, and through ``cuda.core``'s NVRTC path (the exact code the
  cuda-python backend runs) when NVRTC can be loaded;
* every host driver passes each kernel exactly the arguments its CUDA C
  signature declares (count, order of kinds, C types) on a legal launch.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bundled_impl_checks import (
    INDEX_MAP_LAUNCHES,
    available,
    check_implementation,
    check_index_map,
    check_monte_carlo_samples,
    dtypes_of,
    frameworks_imported_by,
    make_problem,
)
from nvrtc_compile import compile_cuda_c
from user_runs import run_command

import pytest_gpucheck.conformance.implementations.cuda_python_impls as cuda_python_impls
import pytest_gpucheck.conformance.implementations.cupy_impls as cupy_impls
from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.conformance.implementations.cuda_c import drivers, sources
from pytest_gpucheck.reference_kernels import CORE_KERNELS as KERNELS
from pytest_gpucheck.registry import implementations, not_applicable_reason

OUR_MODULES = {cupy_impls.__name__: "cupy", cuda_python_impls.__name__: "cuda-python"}
ROOT = Path(__file__).resolve().parents[2]


def _ours(backend: str) -> list[Any]:
    return sorted((impl for impl in implementations(backend=backend, origin="bundled")
                   if impl.func.__module__ in OUR_MODULES),
                  key=lambda impl: (impl.kernel, impl.name))


def _params(backend: str, *, launch: bool) -> list[Any]:
    return [pytest.param(impl, id=impl.id + ":" + impl.kernel) for impl in _ours(backend)
            if impl.takes_launch == launch and impl.kernel != "monte_carlo_pi"]


GPU_IMPLS = _params("cupy", launch=False) + _params("cuda-python", launch=False)
INDEX_MAP_IMPLS = _params("cupy", launch=True) + _params("cuda-python", launch=True)


# -- importing -----------------------------------------------------------------------------
def test_modules_import_without_any_framework() -> None:
    """Registering the bundled implementations imports no framework (checked in a fresh process)."""
    assert frameworks_imported_by(
        [f"pytest_gpucheck.conformance.implementations.{name}"
         for name in ("cupy_impls", "jax_impls", "torch_impls", "cuda_python_impls")],
        ("cupy", "jax", "torch", "cuda.core", "cuda.bindings", "numba")) == []


@pytest.mark.parametrize("backend", ["cupy", "cuda-python"])
def test_every_kernel_implemented_or_not_applicable(backend: str) -> None:
    """CuPy and cuda-python express every kernel: none is silently absent."""
    implemented = {impl.kernel for impl in _ours(backend)}
    missing = [k for k in KERNELS if k not in implemented and not not_applicable_reason(k, backend)]
    assert missing == []


# -- on a GPU ------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", GPU_IMPLS)
def test_matches_reference(impl: Any) -> None:
    """Each implementation equals the reference on every dtype and size (guards, inputs intact)."""
    backend = available(impl.backend)
    assert check_implementation(backend, impl.func, impl.kernel) > 0


@pytest.mark.parametrize("impl", GPU_IMPLS)
def test_strided_and_transposed_inputs(impl: Any) -> None:
    """Strided (1-D) and transposed (2-D) input views are read through their strides."""
    backend = available(impl.backend)
    assert check_implementation(backend, impl.func, impl.kernel, strided=True) > 0


@pytest.mark.parametrize("impl", INDEX_MAP_IMPLS)
def test_index_maps(impl: Any) -> None:
    """The thread with global index i writes element i, on each drawn launch."""
    check_index_map(available(impl.backend), impl.func, impl.kernel)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("impl", [pytest.param(impl, id=impl.id) for name in OUR_MODULES.values()
                                  for impl in _ours(name) if impl.kernel == "monte_carlo_pi"])
def test_monte_carlo_pi(impl: Any, dtype: str) -> None:
    """Samples lie in [0, 1)^2, do not repeat, estimate pi; a seed reproduces its samples."""
    backend = available(impl.backend)

    def samples(seed: int) -> np.ndarray:
        out = backend.empty((4000, 2), np.dtype(dtype))
        impl.func(seed, out)
        return backend.to_host(out)

    first = samples(7)
    check_monte_carlo_samples(first, dtype)
    np.testing.assert_array_equal(samples(7), first)
    assert not np.array_equal(samples(8), first)


# -- the CUDA C compiles -----------------------------------------------------------------------
#: Oldest architecture CUDA 13 compilers accept; every kernel must build for it.
CHECK_ARCH = "sm_75"
SOURCE_CASES = [pytest.param(group, dtype, id=f"{group}-{dtype}")
                for group, (_, _, dtypes) in sources.SOURCES.items() for dtype in dtypes]


def _render(group: str, dtype: str) -> str:
    # histogram reads int32 values into counts of each integer dtype.
    return sources.render(group, dtype, "int32" if group == "histogram" else None)


def _nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH (install the CUDA toolkit to syntax-check the kernels)")
    return nvcc


def _nvcc_compile(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    return run_command([_nvcc(), "--ptx", f"-arch={CHECK_ARCH}", "--fmad=false", "-Werror",
                        "all-warnings", "-o", str(tmp_path / "kernel.ptx"), str(path)],
                       tmp_path, timeout=None)


@pytest.mark.slow
@pytest.mark.parametrize(("group", "dtype"), SOURCE_CASES)
def test_cuda_c_compiles_with_nvcc(group: str, dtype: str, tmp_path: Path) -> None:
    """nvcc compiles each source to PTX without a warning, and every kernel is in it."""
    result = _nvcc_compile(_render(group, dtype), tmp_path)
    assert result.returncode == 0, result.stderr
    ptx = (tmp_path / "kernel.ptx").read_text()
    for kernel in sources.SOURCES[group][1]:
        assert f".entry {kernel}(" in ptx, f"{kernel} missing from the PTX"


def test_nvcc_check_rejects_broken_source(tmp_path: Path) -> None:
    """The nvcc check fails on a kernel that does not compile (a missing semicolon)."""
    broken = _render("vector_add", "float32").replace("wrap_add(a[i * sa], b[i * sb]);",
                                                      "wrap_add(a[i * sa], b[i * sb])")
    assert _nvcc_compile(broken, tmp_path).returncode != 0


def _nvrtc_compile(group: str, dtype: str) -> bytes:
    pytest.importorskip("cuda.core", reason="cuda.core is not installed")
    value_dtype = "int32" if group == "histogram" else dtype
    options = cuda_python_impls.program_options(group, dtype, value_dtype, CHECK_ARCH)
    return compile_cuda_c(sources.render(group, dtype, value_dtype), options, "cubin",
                          f"{options.name}.cu")


@pytest.mark.parametrize(("group", "dtype"), SOURCE_CASES)
def test_cuda_c_compiles_with_nvrtc_with_cuda_cores_options(group: str, dtype: str) -> None:
    """NVRTC compiles each source to a cubin with the options cuda.core's ``Program`` gets
    from the cuda-python backend (``program_options``); no driver needed."""
    assert len(_nvrtc_compile(group, dtype)) > 0


def test_nvrtc_check_rejects_broken_source() -> None:
    """The NVRTC check fails with NVRTC's log on a kernel that does not compile."""
    pytest.importorskip("cuda.core", reason="cuda.core is not installed")
    options = cuda_python_impls.program_options("vector_add", "float32", "float32", CHECK_ARCH)
    broken = _render("vector_add", "float32").replace("wrap_add(a[i * sa], b[i * sb]);",
                                                      "wrap_add(a[i * sa], b[i * sb])")
    with pytest.raises(AssertionError, match='expected a ";"'):
        compile_cuda_c(broken, options, "cubin")


# -- drivers pass what the kernels declare --------------------------------------------------------
_SIGNATURE = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)', re.S)


def _signatures() -> dict[str, list[str]]:
    found = {}
    for body, _, _ in sources.SOURCES.values():
        for name, params in _SIGNATURE.findall(body):
            found[name] = [" ".join(p.split()[:-1]) for p in params.split(",")]
    return found


SIGNATURES = _signatures()
FIXED_BLOCKS = {"transpose": (sources.TILE, sources.TILE),
                "matmul_tiled": (sources.TILE, sources.TILE),
                **{k: (sources.REDUCE_BLOCK,) for k in ("sum", "dot", "weighted_sum",
                                                        "sum_of_squares", "max_partials",
                                                        "max_final")}}


class _Pointer:
    def __init__(self, array: np.ndarray) -> None:
        self.array = array


class RecordingLauncher:
    """A :class:`drivers.Launcher` that checks each launch against the kernel's C signature."""

    def __init__(self) -> None:
        self.launched: list[str] = []

    def arg(self, array: Any) -> Any:
        return _Pointer(array)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return np.empty(shape, dtype)

    def launch(self, kernel: str, dtype: np.dtype, grid: tuple[int, ...],
               block: tuple[int, ...], args: Sequence[Any], *,
               value_dtype: np.dtype | None = None) -> None:
        params = SIGNATURES[kernel]
        assert len(args) == len(params), f"{kernel} takes {len(params)} arguments, got {len(args)}"
        c_types = {"T": np.dtype(dtype).type,
                   "X": np.dtype(value_dtype if value_dtype is not None else dtype).type}
        for position, (param, arg) in enumerate(zip(params, args, strict=True)):
            where = f"{kernel} argument {position} ({param})"
            if "*" in param:
                element = param.replace("const", "").replace("*", "").strip()
                assert isinstance(arg, _Pointer), f"{where}: expected an array, got {arg!r}"
                assert arg.array.dtype.type is c_types[element], f"{where}: {arg.array.dtype}"
            elif param in c_types:
                assert type(arg) is c_types[param], f"{where}: {type(arg).__name__}"
            else:
                expected = {"idx_t": np.int64, "unsigned long long": np.uint64}[param]
                assert type(arg) is expected, f"{where}: {type(arg).__name__}"
        assert 1 <= len(grid) == len(block) <= 3, (grid, block)
        assert min(grid + block) >= 1, (grid, block)
        assert math.prod(block) <= 1024, block
        assert len(block) < 3 or block[2] <= 64, block
        assert all(g <= 65535 for g in grid[1:]), grid
        if kernel in FIXED_BLOCKS:
            assert tuple(block) == FIXED_BLOCKS[kernel], f"{kernel} assumes {FIXED_BLOCKS[kernel]}"
        if kernel == "max_final":
            assert int(args[2]) <= sources.REDUCE_BLOCK
        self.launched.append(kernel)


def _driver(kernel: str) -> Any:
    return getattr(drivers, kernel if kernel not in ("sum", "max") else kernel + "_")


DRIVEN = [k for k in KERNELS if not k.startswith("index_map") and k != "monte_carlo_pi"]


@pytest.mark.parametrize("kernel", DRIVEN)
def test_drivers_match_kernel_signatures(kernel: str) -> None:
    """Every driver launches its kernels with the declared arguments on a legal launch."""
    for dtype in dtypes_of(kernel):
        for n in (0, 1, 33, 1000):
            problem = make_problem(kernel, dtype, n)
            if problem is None:
                continue
            run = RecordingLauncher()
            arguments = dict(problem.inputs)
            if problem.in_place is None:
                arguments["out"] = np.empty(problem.expected.shape, problem.expected.dtype)
            _driver(kernel)(run, **arguments)


@pytest.mark.parametrize("kernel", ["index_map_1d", "index_map_2d", "index_map_3d",
                                    "index_map_grid_stride", "monte_carlo_pi"])
def test_launch_drivers_match_kernel_signatures(kernel: str) -> None:
    """Index maps launch on the caller's configuration; monte_carlo_pi takes a 64-bit seed."""
    run = RecordingLauncher()
    if kernel == "monte_carlo_pi":
        drivers.monte_carlo_pi(run, 2**40 + 3, np.empty((9, 2), np.float32))
    else:
        for shape, launch in INDEX_MAP_LAUNCHES[kernel]:
            drivers.__dict__[kernel](run, np.empty(shape, np.int32), launch)
    assert run.launched


def test_signature_check_rejects_wrong_arguments() -> None:
    """A launch with an argument missing, or a Python int for a 64-bit index, is rejected."""
    x = np.zeros(4, np.float32)
    run = RecordingLauncher()
    good = [run.arg(x), run.arg(x), run.arg(x), *[np.int64(v) for v in (4, 1, 1, 1)]]
    run.launch("vector_add", x.dtype, (1,), (256,), good)
    with pytest.raises(AssertionError, match="takes 7 arguments"):
        run.launch("vector_add", x.dtype, (1,), (256,), good[:-1])
    with pytest.raises(AssertionError, match="int"):
        run.launch("vector_add", x.dtype, (1,), (256,), [*good[:3], 4, *good[4:]])
    with pytest.raises(AssertionError, match="assumes"):
        run.launch("sum", x.dtype, (1,), (128,), [run.arg(x), run.arg(x), np.int64(4),
                                                  np.int64(1)])


def test_element_strides() -> None:
    """Byte strides become element strides (negative and transposed included)."""
    a = np.zeros((4, 6), np.float64)
    assert drivers.element_strides(a) == (6, 1)
    assert drivers.element_strides(a.T) == (1, 6)
    assert drivers.element_strides(a[::-2, ::3]) == (-12, 3)

    class Bare:
        shape, dtype, strides = (2, 3), np.dtype(np.int32), None

    assert drivers.element_strides(Bare()) == (3, 1)


# -- CuPy's array code, with NumPy standing in for CuPy's NumPy-compatible API -------------------
ARRAY_IMPLS = [pytest.param(impl, id=impl.kernel) for impl in _ours("cupy")
               if impl.name == "array" and impl.kernel != "monte_carlo_pi"]


@pytest.mark.parametrize("impl", ARRAY_IMPLS)
def test_cupy_array_code_logic_with_numpy(impl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``array`` implementations' logic (slices, halos, steps, dtypes) on NumPy arrays.

    CuPy mirrors NumPy's API for every call these functions make, so running
    them with ``numpy`` as the array module checks everything but CuPy itself
    (which only a GPU run checks), strided and transposed inputs included.
    """
    monkeypatch.setattr(cupy_impls, "_cupy", lambda: np)
    host = get_backend("numpy")
    assert check_implementation(host, impl.func, impl.kernel) > 0
    assert check_implementation(host, impl.func, impl.kernel, strided=True) > 0
