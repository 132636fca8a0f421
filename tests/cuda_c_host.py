"""Run the bundled CUDA C kernels on the host, one OS thread per CUDA thread.

A test tool, not part of the plugin: it lets a machine without a GPU execute
the exact kernels of ``conformance/implementations/cuda_c/sources.py`` through
the exact host drivers, so indexing, strides, grid-stride loops, shared-memory
tiles, block barriers and atomics are checked against the references here,
not only on a GPU runner.

How: the source is compiled as C++20 with a small shim that maps the CUDA
built-ins onto the host -- ``threadIdx`` is thread-local, ``__shared__``
becomes ``static`` (blocks run one after another, so one block at a time owns
it), ``__syncthreads`` is a ``std::barrier`` across the block's threads, and
``atomicAdd`` is a ``std::atomic_ref`` fetch-add.  For each kernel a
``launch__<name>(grid, block, args...)`` wrapper runs every block, starting
one ``std::thread`` per CUDA thread.  Arrays are NumPy arrays (any strides);
:class:`HostLauncher` implements the drivers' ``Launcher`` protocol.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from user_runs import run_command

from pytest_gpucheck.conformance.implementations.cuda_c import sources

SHIM = r"""
#include <atomic>
#include <barrier>
#include <cstring>
#include <math.h>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
static dim3 gridDim, blockDim, blockIdx;
static thread_local dim3 threadIdx;
static std::barrier<>* block_barrier = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, sizeof f); return f; }
inline double __longlong_as_double(long long v) {
    double d; std::memcpy(&d, &v, sizeof d); return d;
}
template <class V> V atomicAdd(V* p, V v) { return std::atomic_ref<V>(*p).fetch_add(v); }
"""

# Wrapper-local names end in "_" so that no kernel parameter (x, y, n, ...) is shadowed.
_LAUNCH = """
extern "C" void launch__{name}(unsigned gx_, unsigned gy_, unsigned gz_, unsigned bx_,
                              unsigned by_, unsigned bz_, {params}) {{
    gridDim = dim3{{gx_, gy_, gz_}};
    blockDim = dim3{{bx_, by_, bz_}};
    std::barrier<> barrier_((std::ptrdiff_t)(bx_ * by_ * bz_));
    block_barrier = &barrier_;
    for (unsigned z_ = 0; z_ < gz_; ++z_)
    for (unsigned y_ = 0; y_ < gy_; ++y_)
    for (unsigned x_ = 0; x_ < gx_; ++x_) {{
        blockIdx = dim3{{x_, y_, z_}};
        std::vector<std::thread> threads_;
        for (unsigned tz_ = 0; tz_ < bz_; ++tz_)
        for (unsigned ty_ = 0; ty_ < by_; ++ty_)
        for (unsigned tx_ = 0; tx_ < bx_; ++tx_)
            threads_.emplace_back([=] {{ threadIdx = dim3{{tx_, ty_, tz_}}; {name}({args}); }});
        for (auto& thread_ : threads_) thread_.join();
    }}
}}
"""

_SIGNATURE = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)', re.S)

Patch = Callable[[str], str]


def signatures(body: str) -> dict[str, list[tuple[str, str]]]:
    """``{kernel: [(C type, parameter name), ...]}`` of the ``__global__`` functions in ``body``."""
    found = {}
    for name, params in _SIGNATURE.findall(body):
        pairs = []
        for param in params.split(","):
            *kind, pname = param.split()
            pairs.append((" ".join(kind), pname))
        found[name] = pairs
    return found


def compiler() -> str | None:
    """The C++ compiler used, or None when there is none."""
    return shutil.which("g++") or shutil.which("clang++")


def host_source(dtype: str, value_dtype: str, patch: Patch | None = None,
                only_group: str | None = None) -> str:
    """Every source group for ``dtype`` in one C++ file, with the shim and launch wrappers.

    One file per dtype keeps compilation to a few seconds in all; each group
    lives in its own namespace, so helpers that several groups define (such as
    ``block_sum_into``) do not collide, while the ``extern "C"`` kernels and
    wrappers keep their plain names.
    """
    parts = [SHIM]
    for group, (body, _, dtypes) in sources.SOURCES.items():
        if dtype not in dtypes or only_group not in (None, group):
            continue
        rendered = sources.render(group, dtype, value_dtype)
        if len(parts) == 1:
            parts.append(rendered[: len(rendered) - len(body)])  # typedefs and prelude, once
        wrappers = [
            _LAUNCH.format(name=name, params=", ".join(f"{kind} {pname}" for kind, pname in params),
                           args=", ".join(pname for _, pname in params))
            for name, params in signatures(body).items()
        ]
        parts.append(f"namespace group_{group} {{\n{body}{''.join(wrappers)}}}\n")
    source = "".join(parts)
    return patch(source) if patch is not None else source


_BUILD_DIR = Path(tempfile.mkdtemp(prefix="gpucheck-cuda-c-host-"))
# Removed when the test process ends: every suite run left one in the temporary
# folder (79 of them on one machine in a day).
atexit.register(shutil.rmtree, _BUILD_DIR, ignore_errors=True)


@functools.cache
def _library(source: str) -> ctypes.CDLL:
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++ or clang++) on PATH")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = _BUILD_DIR / f"kernels_{digest}.cpp"
    library = path.with_suffix(".so")
    path.write_text(source)
    run_command([cxx, "-std=c++20", "-O0", "-pthread", "-shared", "-fPIC", "-w",
                 "-o", str(library), str(path)], path.parent, timeout=None).check_returncode()
    return ctypes.CDLL(str(library))


_C_SCALARS: dict[type, Any] = {
    np.int32: ctypes.c_int,
    np.int64: ctypes.c_longlong,
    np.uint64: ctypes.c_ulonglong,
    np.float32: ctypes.c_float,
    np.float64: ctypes.c_double,
}


class HostLauncher:
    """Runs the drivers' kernels on NumPy arrays on the host (see the module docstring).

    ``patch`` edits the rendered CUDA C before compiling: the tests use it to
    plant bugs and show the checks catch them.
    """

    def __init__(self, patch: Patch | None = None) -> None:
        self.patch = patch

    def arg(self, array: Any) -> Any:
        # NumPy's data pointer is the address of the view's first element.
        return ctypes.c_void_p(array.ctypes.data)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return np.empty(shape, dtype)

    def launch(self, kernel: str, dtype: np.dtype, grid: tuple[int, ...],
               block: tuple[int, ...], args: Sequence[Any], *,
               value_dtype: np.dtype | None = None) -> None:
        dtype_name = np.dtype(dtype).name
        value_name = np.dtype(value_dtype).name if value_dtype is not None else dtype_name
        # A patched (deliberately broken) build compiles only the kernel's group.
        only_group = sources.group_of(kernel) if self.patch is not None else None
        source = host_source(dtype_name, value_name, self.patch, only_group)
        function = getattr(_library(source), f"launch__{kernel}")
        c_args = [arg if isinstance(arg, ctypes.c_void_p) else _C_SCALARS[type(arg)](arg)
                  for arg in args]
        dims = [ctypes.c_uint(v) for v in (*_pad(grid), *_pad(block))]
        function.argtypes = [type(a) for a in (*dims, *c_args)]
        function.restype = None
        function(*dims, *c_args)


def _pad(dims: Sequence[int]) -> tuple[int, int, int]:
    padded = (*dims, 1, 1, 1)
    return int(padded[0]), int(padded[1]), int(padded[2])
