"""The bundled NumPy, Numba CPU and ``@cuda.jit`` implementations against the references.

Direct and fast, independent of the hypothesis suites in ``conformance/``:
each implementation runs on every dtype of its contract and sizes 0, 1, 7 and
33, with guard-banded outputs and strided / transposed inputs (helpers in
``bundled_impl_checks.py``).  The ``@cuda.jit`` kernels run on Numba's CUDA
simulator in a child process (``numba_cuda_simulator_checks.py``), since
``NUMBA_ENABLE_CUDASIM`` only takes effect before ``numba.cuda`` is imported.

The last tests feed deliberately broken kernels to the same checks and show
that each is rejected.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bundled_impl_checks import (
    available,
    check_implementation,
    check_monte_carlo_samples,
    frameworks_imported_by,
)
from user_runs import run_command

from pytest_gpucheck.reference_kernels import CORE_KERNELS as KERNELS
from pytest_gpucheck.registry import implementations, not_applicable_reason

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
OUR_MODULES = ("numpy_impls", "numba_cpu_impls", "numba_cuda_impls")


def _ours(backend: str) -> list[Any]:
    return sorted((impl for impl in implementations(backend=backend, origin="bundled")
                   if impl.func.__module__.rsplit(".", 1)[-1] in OUR_MODULES),
                  key=lambda impl: impl.kernel)


def _params(backend: str) -> list[Any]:
    return [pytest.param(impl, id=impl.kernel) for impl in _ours(backend)
            if impl.kernel != "monte_carlo_pi"]


# -- registration -----------------------------------------------------------------------------


def test_registering_imports_no_numba() -> None:
    """Importing the bundled modules registers everything without importing Numba."""
    assert frameworks_imported_by(
        [f"pytest_gpucheck.conformance.implementations.{name}"
         for name in ("numpy_impls", "numba_cpu_impls", "numba_cuda_impls")],
        ("numba", "llvmlite", "cupy", "jax", "torch", "cuda")) == []


@pytest.mark.parametrize("backend", ["numpy", "numba-cpu", "numba-cuda", "numba-cudasim"])
def test_every_kernel_implemented_or_not_applicable(backend: str) -> None:
    """No kernel is silently absent: implemented, or not applicable with a reason."""
    implemented = {impl.kernel for impl in _ours(backend)}
    missing = [k for k in KERNELS if k not in implemented and not not_applicable_reason(k, backend)]
    assert missing == []


def test_gpu_and_simulator_share_the_same_callables() -> None:
    """numba-cuda and numba-cudasim run the very same code."""
    gpu = {impl.kernel: impl.func for impl in _ours("numba-cuda")}
    simulated = {impl.kernel: impl.func for impl in _ours("numba-cudasim")}
    assert gpu == simulated
    assert set(gpu) == set(KERNELS)


# -- NumPy and Numba CPU ----------------------------------------------------------------------


@pytest.mark.parametrize("impl", _params("numpy"))
def test_numpy_matches_reference(impl: Any) -> None:
    """Every dtype and size; guard bands and inputs intact."""
    backend = available("numpy")
    assert check_implementation(backend, impl.func, impl.kernel) > 0
    assert check_implementation(backend, impl.func, impl.kernel, strided=True, sizes=(7,)) > 0


@pytest.mark.parametrize("impl", _params("numba-cpu"))
def test_numba_cpu_matches_reference(impl: Any) -> None:
    """Every dtype and size; guard bands and inputs intact; strided and transposed inputs."""
    backend = available("numba-cpu")
    assert check_implementation(backend, impl.func, impl.kernel) > 0
    assert check_implementation(backend, impl.func, impl.kernel, strided=True, sizes=(7,)) > 0


@pytest.mark.parametrize("backend_name", ["numpy", "numba-cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_monte_carlo_pi(backend_name: str, dtype: str) -> None:
    """Samples in [0, 1)^2, no repeats, pi within 5 standard errors; seeded reproducibly."""
    available(backend_name)
    (impl,) = [impl for impl in _ours(backend_name) if impl.kernel == "monte_carlo_pi"]

    def draw(seed: int, n: int) -> np.ndarray:
        out = np.empty((n, 2), dtype)
        impl.func(seed, out)
        return out

    check_monte_carlo_samples(draw(3, 20_000), dtype)
    np.testing.assert_array_equal(draw(3, 100), draw(3, 100))
    assert not np.array_equal(draw(4, 100), draw(3, 100))


# -- @cuda.jit on the simulator ---------------------------------------------------------------


def test_cuda_kernels_on_the_simulator() -> None:
    """Runs ``numba_cuda_simulator_checks.py`` under ``NUMBA_ENABLE_CUDASIM=1``: all must pass."""
    pytest.importorskip("numba.cuda")
    # --noconftest: the tests' conftest imports every framework up front,
    # which the child does not need.
    command = [sys.executable, "-m", "pytest", str(ROOT / "tests/numba_cuda_simulator_checks.py"),
               "-q", "-p", "no:cacheprovider", "--noconftest", "-W", "ignore::Warning",
               "-n0"]  # one process: the project's addopts would start workers
    result = run_command(command, ROOT, timeout=1200, extra_env={
        "NUMBA_ENABLE_CUDASIM": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    summary = output.strip().splitlines()[-1]
    assert re.fullmatch(r"=* ?\d+ passed in [\d.]+s.*", summary), summary


# -- the checks reject broken kernels ---------------------------------------------------------


def _broken(kind: str) -> Any:
    """Deliberately wrong NumPy / ``@njit`` kernels, one bug each."""
    import numba

    if kind == "sum drops the last element":
        def sum_(x: np.ndarray, out: np.ndarray) -> None:
            out[0] = np.sum(x[:-1], dtype=out.dtype)
        return sum_
    if kind == "heat step updates u in place":
        def heat_step_1d(u: np.ndarray, alpha: Any, out: np.ndarray) -> None:
            for i in range(1, u.shape[0] - 1):
                u[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1])
            out[...] = u
            if out.shape[0]:
                out[0] = out[-1] = 0
        return heat_step_1d
    if kind == "halo forgets the corners":
        def halo_exchange_2d(a: np.ndarray, width: int) -> None:
            w = int(width)
            if w:
                a[:w, w:-w] = a[-2 * w:-w, w:-w]
                a[-w:, w:-w] = a[w:2 * w, w:-w]
                a[w:-w, :w] = a[w:-w, -2 * w:-w]
                a[w:-w, -w:] = a[w:-w, w:2 * w]
        return halo_exchange_2d
    if kind == "vector_add writes one past the end":
        @numba.njit
        def loop(a: Any, b: Any, out: Any) -> None:  # no bounds checks in @njit code
            for i in range(out.shape[0] + 1):
                out[i] = a[min(i, a.shape[0] - 1)] + b[min(i, b.shape[0] - 1)]

        def vector_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
            loop(a, b, out)
        return vector_add
    if kind == "matmul swaps rows and columns":
        def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
            out[...] = (a @ b).T.reshape(out.shape)
        return matmul
    raise KeyError(kind)


BROKEN = {
    "sum drops the last element": "sum",
    "heat step updates u in place": "heat_step_1d",
    "halo forgets the corners": "halo_exchange_2d",
    "vector_add writes one past the end": "vector_add",
    "matmul swaps rows and columns": "matmul",
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_kernel_is_rejected(kind: str) -> None:
    """The same checks that pass the bundled kernels fail each deliberately broken one."""
    backend = available("numba-cpu")
    with pytest.raises(AssertionError):
        check_implementation(backend, _broken(kind), BROKEN[kind])


def test_shared_random_stream_is_rejected() -> None:
    """Threads replaying one stream (the same seed each) produce repeated samples."""
    stream = np.random.default_rng(5).random((64, 2))
    with pytest.raises(AssertionError, match="shared stream"):
        check_monte_carlo_samples(np.tile(stream, (32, 1)), "float64")
