"""The bundled implementations of the ufunc, transforms, multi-device and grid-sync kernels:
none silently absent, registration imports no framework, and the simulator's
not-applicable reason is what the installed numba-cuda really does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from user_runs import run_command

from pytest_gpucheck.backends import BACKENDS
from pytest_gpucheck.reference_kernels import CORE_KERNELS, KERNELS
from pytest_gpucheck.registry import implementations, not_applicable_reason

ROOT = Path(__file__).parents[2]
NEW_KERNELS = [k for k in KERNELS if k not in CORE_KERNELS]
MODULES = ("ufunc_impls", "transform_impls", "multi_device_impls", "grid_sync_impls",
           "cupy_fuse_impls")


def test_the_new_families_have_kernels() -> None:
    assert len(NEW_KERNELS) == 14


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_new_kernel_implemented_or_not_applicable(backend: str) -> None:
    """Each cell of the new rows is a bundled implementation or a stated reason, never both."""
    bundled = {impl.kernel for impl in implementations(backend=backend, origin="bundled")}
    for kernel in NEW_KERNELS:
        reason = not_applicable_reason(kernel, backend)
        assert (kernel in bundled) != bool(reason), (kernel, backend, reason)
        if reason:
            assert len(reason) > 30, f"say why {kernel} is not applicable on {backend}"


def test_registering_imports_no_framework() -> None:
    code = (
        "import sys\n"
        + "".join(f"import pytest_gpucheck.conformance.implementations.{m}\n" for m in MODULES)
        + "heavy = ('numba', 'llvmlite', 'cupy', 'jax', 'torch', 'cuda')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = run_command([sys.executable, "-c", code], ROOT, timeout=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.slow
def test_simulator_reason_is_what_numba_cuda_does() -> None:
    """The simulator cells are not applicable because the installed numba-cuda cannot
    build ``target='cuda'`` ufuncs; when that changes, this fails and the cells can run."""
    pytest.importorskip("numba")
    code = (
        "import numba\n"
        "import numpy as np\n"
        "def add(a, b):\n"
        "    return a + b\n"
        "def copy(a, out):\n"
        "    out[0] = a[0]\n"
        "builds = [lambda: numba.vectorize(['float32(float32, float32)'], target='cuda')(add),\n"
        "          lambda: numba.guvectorize(['void(float32[:], float32[:])'], '(n)->()',\n"
        "                                    target='cuda')(copy)]\n"
        "for build in builds:\n"
        "    try:\n"
        "        f = build()\n"
        "        x = np.ones(4, np.float32)\n"
        "        f(x, x) if f.__class__.__name__.endswith('UFuncDispatcher') else f(x)\n"
        "        print('ran')\n"
        "    except AttributeError as exc:\n"
        "        print(exc)\n"
    )
    result = run_command([sys.executable, "-c", code], ROOT, timeout=900,
                         extra_env={"NUMBA_ENABLE_CUDASIM": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    reason = not_applicable_reason("ufunc_saxpy", "numba-cudasim") or ""
    assert lines[0] in reason, (lines, reason)
    assert lines[1] in (not_applicable_reason("gufunc_dot", "numba-cudasim") or ""), lines
