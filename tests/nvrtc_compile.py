"""Compile CUDA C with NVRTC on a machine without a GPU, with cuda.core's own flags.

The tests that prove the bundled and planted CUDA C compiles used cuda.core's
``Program(...).compile(...)``.  cuda.core 1.2 loads the NVIDIA driver library
before it compiles, so on a machine with NVRTC but no driver (CI) it raised
``DynamicLibNotFoundError`` and those tests skipped, saying "NVRTC is not
installed": the CUDA C was no longer compiled anywhere but on a GPU.  Here the
options are still cuda.core's (``ProgramOptions.as_bytes("nvrtc")``, the list
``Program`` hands NVRTC), and the compiler is NVRTC itself, called through
``cuda.bindings.nvrtc``, which needs no driver.  Only a missing NVRTC skips; a
compile error fails with NVRTC's log.
"""

from __future__ import annotations

from typing import Any

import pytest


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        pytest.skip(f"cuda.bindings is not installed ({exc}); pip install cuda-python")
    return nvrtc


def _check(nvrtc: Any, result: tuple[Any, ...], what: str) -> tuple[Any, ...]:
    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what}: {result[0]!r}")
    return result[1:]


def compile_cuda_c(source: str, options: Any, target: str = "ptx",
                   name: str = "gpucheck_check.cu") -> bytes:
    """``source`` compiled by NVRTC with ``options`` (a ``cuda.core.ProgramOptions``) to
    ``target`` (``"ptx"`` or ``"cubin"``): the object code, or an ``AssertionError``
    holding NVRTC's log; a skip when NVRTC cannot be loaded."""
    nvrtc = _nvrtc()
    flags = list(options.as_bytes("nvrtc", target))
    try:
        (program,) = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(),
                                                            0, [], []), "nvrtcCreateProgram")
    except Exception as exc:
        # cuda.pathfinder raises DynamicLibNotFoundError when libnvrtc is absent.
        if type(exc).__name__ in ("DynamicLibNotFoundError", "NotSupportedError"):
            pytest.skip(f"NVRTC is not installed ({exc}); pip install nvidia-cuda-nvrtc")
        raise
    try:
        compiled = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
        if compiled[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            (size,) = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "log size")
            log = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "log")
            raise AssertionError(f"NVRTC could not compile {name} with "
                                 f"{[f.decode() for f in flags]}:\n"
                                 f"{log.decode(errors='replace').rstrip()}")
        size_of, get = ((nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if target == "ptx"
                        else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
        (size,) = _check(nvrtc, size_of(program), f"{target} size")
        code = b" " * size
        _check(nvrtc, get(program, code), target)
        return code
    finally:
        nvrtc.nvrtcDestroyProgram(program)
