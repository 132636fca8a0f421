"""The bundled JAX and PyTorch implementations against the NumPy references (CPU tier).

Every bundled implementation on ``jax-cpu`` and ``torch-cpu`` is called
directly on small inputs of each contract dtype, sizes 0 and 1 included;
torch also with strided and transposed inputs.  The last group of tests feeds
deliberately broken implementations to the same checks and shows they are
rejected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bundled_impl_checks import (
    assert_matches,
    available,
    check_implementation,
    check_monte_carlo_samples,
    make_problem,
    run_out_style,
)
from user_runs import run_command

import pytest_gpucheck.conformance.implementations.jax_impls as jax_impls
import pytest_gpucheck.conformance.implementations.torch_impls as torch_impls
from pytest_gpucheck.reference_kernels import CORE_KERNELS as KERNELS
from pytest_gpucheck.registry import implementations, not_applicable_reason

OUR_MODULES = {jax_impls.__name__: ("jax-cpu", "jax-gpu"),
               torch_impls.__name__: ("torch-cpu", "torch-cuda")}


def _ours(backend: str) -> list[Any]:
    return sorted((impl for impl in implementations(backend=backend, origin="bundled")
                   if impl.func.__module__ in OUR_MODULES), key=lambda impl: impl.kernel)


def _checked(backend: str) -> list[Any]:
    return [pytest.param(impl, id=f"{backend}:{impl.kernel}")
            for impl in _ours(backend) if impl.kernel != "monte_carlo_pi"]


@pytest.mark.slow
@pytest.mark.parametrize("impl", _checked("jax-cpu") + _checked("torch-cpu"))
def test_matches_reference(impl: Any) -> None:
    """Each implementation equals the reference on every dtype and size (guards, inputs intact)."""
    backend = available(impl.backend)
    assert check_implementation(backend, impl.func, impl.kernel) > 0


@pytest.mark.parametrize("impl", _checked("torch-cpu"))
def test_torch_strided_and_transposed_inputs(impl: Any) -> None:
    """torch implementations read strided (1-D) and transposed (2-D) input views correctly."""
    backend = available(impl.backend)
    assert check_implementation(backend, impl.func, impl.kernel, strided=True) > 0


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["jax-cpu", "torch-cpu"])
def test_monte_carlo_pi(name: str, dtype: str) -> None:
    """Samples lie in [0, 1)^2, do not repeat, estimate pi; a seed reproduces its samples."""
    backend = available(name)
    (impl,) = [impl for impl in _ours(name) if impl.kernel == "monte_carlo_pi"]

    def samples(seed: int) -> np.ndarray:
        if impl.writes_out:
            out = backend.empty((4000, 2), np.dtype(dtype))
            impl.func(seed, out)
            return backend.to_host(out)
        return backend.to_host(impl.func(seed, 4000, dtype))

    first = samples(7)
    check_monte_carlo_samples(first, dtype)
    np.testing.assert_array_equal(samples(7), first)
    assert not np.array_equal(samples(8), first), "the seed does not change the samples"


@pytest.mark.parametrize("backend", ["jax-cpu", "jax-gpu", "torch-cpu", "torch-cuda"])
def test_every_kernel_implemented_or_not_applicable(backend: str) -> None:
    """No kernel is silently absent: each has a bundled implementation or a stated reason."""
    implemented = {impl.kernel for impl in _ours(backend)}
    for kernel in KERNELS:
        reason = not_applicable_reason(kernel, backend)
        assert (kernel in implemented) != bool(reason), (kernel, reason)
        if reason:
            assert len(reason) > 30, f"say why {kernel} is not applicable on {backend}"


def test_jax_compilations_are_bounded() -> None:
    """``steps`` is traced (one compilation for any count); ``width`` compiles once per value."""
    backend = available("jax-cpu")
    # Shapes no other test uses, so that only these calls can add compilations.
    u = backend.to_device(np.linspace(0, 1, 41))
    heat = jax_impls.heat_steps_1d.compiled()
    before = heat._cache_size()
    for steps in (0, 1, 2, 5, 3):
        jax_impls.heat_steps_1d(u, 0.25, steps)
    assert heat._cache_size() - before == 1
    a = backend.to_device(np.arange(43, dtype=np.int32))
    halo = jax_impls.halo_exchange_1d.compiled()
    before = halo._cache_size()
    for width in (0, 1, 2, 1, 2):
        jax_impls.halo_exchange_1d(a, width)
    assert halo._cache_size() - before == 3


# -- deliberately broken implementations are rejected ---------------------------------------
def _rejected(backend_name: str, func: Any, kernel: str, match: str, **kwargs: Any) -> None:
    backend = available(backend_name)
    with pytest.raises(AssertionError, match=match):
        check_implementation(backend, func, kernel, **kwargs)


def test_rejects_heat_step_that_updates_its_input() -> None:
    def heat_step_in_place(u: Any, alpha: Any, out: Any) -> None:
        torch_impls.heat_step_1d(u, alpha, out)
        u.add_(0.5)

    _rejected("torch-cpu", heat_step_in_place, "heat_step_1d", "wrote its input")


def test_rejects_write_past_the_end() -> None:
    torch = pytest.importorskip("torch")

    def vector_add_overrun(a: Any, b: Any, out: Any) -> None:
        torch.add(a, b, out=out)
        # One element past the end, as a kernel without a bounds check writes it.
        torch.as_strided(out, (out.shape[0] + 1,), (1,))[-1] = 0

    _rejected("torch-cpu", vector_add_overrun, "vector_add", "past the end of out", sizes=(7,))


def test_rejects_halo_exchange_without_corners() -> None:
    def halo_2d_no_corners(a: Any, width: int) -> Any:
        if not width:
            return a
        rows = a.shape[0]
        a = jax_impls._halo_axis(a, width, 0)
        # Axis 1 over the interior rows only: the corner ghosts keep stale values.
        inner = jax_impls._halo_axis(a[width:rows - width], width, 1)
        return a.at[width:rows - width].set(inner)

    _rejected("jax-cpu", halo_2d_no_corners, "halo_exchange_2d", "Arrays are not equal")


def test_rejects_wrong_output_dtype() -> None:
    jnp = pytest.importorskip("jax.numpy")

    def sum_in_float64(x: Any) -> Any:
        return jnp.sum(x, dtype=jnp.float64).reshape(1)

    _rejected("jax-cpu", sum_in_float64, "sum", "dtype float64")


def test_rejects_reduction_that_drops_the_last_element() -> None:
    def sum_drops_tail(x: Any, out: Any) -> None:
        out.copy_(x[:-1].sum(dtype=x.dtype).reshape(1))

    _rejected("torch-cpu", sum_drops_tail, "sum", "Arrays are not equal")


def test_rejects_kernel_that_ignores_input_strides() -> None:
    torch = pytest.importorskip("torch")

    def vector_add_assumes_contiguous(a: Any, b: Any, out: Any) -> None:
        dense_a = torch.as_strided(a, a.shape, (1,))
        torch.add(dense_a, b, out=out)

    # Contiguous inputs hide the bug; the strided run exposes it.
    assert check_implementation(available("torch-cpu"), vector_add_assumes_contiguous,
                                "vector_add") > 0
    _rejected("torch-cpu", vector_add_assumes_contiguous, "vector_add", "Arrays are not equal",
              strided=True)


def test_rejects_unwritten_output_elements() -> None:
    def transpose_skips_last_row(a: Any, out: Any) -> None:
        out[:-1].copy_(a.T[:-1])

    _rejected("torch-cpu", transpose_skips_last_row, "transpose", "Arrays are not equal")


def test_rejects_monte_carlo_with_shared_stream() -> None:
    torch = pytest.importorskip("torch")

    backend = available("torch-cpu")
    out = backend.empty((4000, 2), np.dtype("float64"))
    generator = torch.Generator().manual_seed(3)
    # Every "thread" restarts the same stream: all rows are the same sample.
    out.copy_(torch.rand((1, 2), generator=generator, dtype=torch.float64).expand(4000, 2))
    with pytest.raises(AssertionError, match="shared stream"):
        check_monte_carlo_samples(backend.to_host(out), "float64")


def test_in_place_kernel_checked_in_place_on_torch() -> None:
    """An in-place kernel that returns a new array instead of updating ``a`` is rejected."""
    backend = available("torch-cpu")
    problem = make_problem("add_one_2d", "int64", 7)
    assert problem is not None

    def add_one_returns(a: Any) -> Any:
        return a + 1

    region = run_out_style(backend, add_one_returns, problem)
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        assert_matches(problem, region, "torch-cpu")


@pytest.mark.slow
def test_jax_impls_keep_float64_without_the_backend() -> None:
    """Called directly (no backend probe enabled x64 first), float64 stays float64."""
    import sys
    from pathlib import Path

    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import numpy as np\n"
        "import pytest_gpucheck.conformance.implementations.jax_impls as J\n"
        "print(J.sum_(np.ones(3)).dtype, J.monte_carlo_pi(1, 4, 'float64').dtype)\n"
    )
    result = run_command([sys.executable, "-c", code], Path(__file__).parents[2], timeout=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["float64", "float64"]
