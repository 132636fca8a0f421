"""Direct checks of bundled implementations against the NumPy references.

Shared by ``test_bundled_jax_torch_impls.py`` (CPU tier) and
``test_bundled_gpu_impls.py`` (GPU tier).  Independent of the hypothesis
suites in ``conformance/``: each bundled implementation is called once per
(dtype, size) on small deterministic inputs (sizes 0 and 1 included), with
outputs and in-place arrays inside guard bands, optionally with strided or
transposed inputs, and every input is compared with its original afterwards.

Each kernel's dtypes, in-place argument and output start are read from its
catalog entry (``pytest_gpucheck.reference_kernels.catalog``).  Inputs are chosen so that the
expected result is exact in any evaluation order (integer-valued floats,
power-of-two scalars) and compared bit for bit, except for ``sigmoid`` and
the heat and Laplacian stencils, whose general float inputs are compared
under the kernel's own tolerance rule (``pytest_gpucheck.checking.kernel_rules``), the
one the conformance suites and the MPI checks apply.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from user_runs import run_command

from pytest_gpucheck.checking.device_views import slice_view, transpose_view
from pytest_gpucheck.checking.guards import GuardedBuffer, poison_value, same_bits
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.checking.kernel_rules import tolerance_of
from pytest_gpucheck.reference_kernels import CATALOG, KERNELS

ROOT = Path(__file__).resolve().parents[1]
SIZES = (0, 1, 7, 33)
HISTOGRAM_BINS = 7


def available(name: str) -> Any:
    """The process's backend ``name``, or a skip with the reason its probe gave."""
    from pytest_gpucheck.backends import get_backend

    backend = get_backend(name)
    probe = backend.probe()
    if not probe.available:
        pytest.skip(probe.reason)
    return backend


def frameworks_imported_by(modules: Sequence[str], frameworks: Sequence[str]) -> list[str]:
    """Import ``modules`` in a fresh interpreter (from the repository root) and return the
    modules of ``frameworks`` (a name and its submodules) it then holds: registering
    implementations must import none."""
    code = (f"import json, sys\nfor name in {list(modules)!r}:\n    __import__(name)\n"
            f"heavy = {tuple(frameworks)!r}\n"
            "print(json.dumps(sorted(m for m in sys.modules if any(m == h or "
            "m.startswith(h + '.') for h in heavy))))\n")
    result = run_command([sys.executable, "-c", code], ROOT, timeout=None)
    assert result.returncode == 0, result.stderr
    imported: list[str] = json.loads(result.stdout)
    return imported


@dataclass(frozen=True)
class Problem:
    """One call: contract-order inputs and the expected result."""

    kernel: str
    inputs: dict[str, Any]
    expected: np.ndarray
    #: Arguments a return-style callable takes instead of ``out`` (histogram: nbins).
    size_args: dict[str, Any] | None = None
    #: True when the inputs make the result exact in any evaluation order (compared bit
    #: for bit); False for general float inputs (compared under the kernel's rule).
    exact: bool = True

    @property
    def out_init(self) -> str:
        """How ``out`` starts: "poison", "zero" or "lowest" (the catalog's)."""
        return CATALOG[self.kernel].output_init

    @property
    def in_place(self) -> str | None:
        """The argument the kernel updates in place (the catalog's), or None."""
        return CATALOG[self.kernel].in_place

    def describe(self) -> str:
        shapes = {k: (v.shape, str(v.dtype)) if isinstance(v, np.ndarray) else v
                  for k, v in self.inputs.items()}
        return f"{self.kernel}{shapes}"


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, bound: int) -> np.ndarray:
    """Integer-valued elements in ``[-bound, bound]``: sums and products of them are exact."""
    return rng.integers(-bound, bound + 1, size=shape).astype(dtype)


def _reference(kernel: str, *args: Any) -> np.ndarray:
    return np.asarray(KERNELS[kernel](*args))


def dtypes_of(kernel: str) -> tuple[str, ...]:
    """The dtypes a kernel is checked with here (those of its catalog entry)."""
    return CATALOG[kernel].dtypes


def make_problem(kernel: str, dtype: str, n: int, seed: int = 0) -> Problem | None:
    """A problem of size ``n`` (None where the contract excludes it, e.g. max of nothing)."""
    rng = np.random.default_rng(seed)
    t = np.dtype(dtype).type
    if kernel == "vector_add":
        a, b = _values(rng, (n,), dtype, 1000), _values(rng, (n,), dtype, 1000)
        return Problem(kernel, {"a": a, "b": b}, _reference(kernel, a, b))
    if kernel == "saxpy":
        alpha, x, y = t(0.25), _values(rng, (n,), dtype, 100), _values(rng, (n,), dtype, 100)
        return Problem(kernel, {"alpha": alpha, "x": x, "y": y}, _reference(kernel, alpha, x, y))
    if kernel == "sigmoid":
        x = rng.uniform(-30, 30, size=n).astype(dtype)
        return Problem(kernel, {"x": x}, _reference(kernel, x), exact=False)
    if kernel == "add_one_2d":
        a = _values(rng, (n, 5), dtype, 1000)
        return Problem(kernel, {"a": a}, _reference(kernel, a.copy()))
    if kernel == "transpose":
        a = _values(rng, (n, 5), dtype, 1000)
        return Problem(kernel, {"a": a}, _reference(kernel, a))
    if kernel in ("sum", "sum_of_squares"):
        x = _values(rng, (n,), dtype, 8)
        return Problem(kernel, {"x": x}, _reference(kernel, x))
    if kernel in ("dot", "weighted_sum"):
        x, other = _values(rng, (n,), dtype, 8), _values(rng, (n,), dtype, 8)
        name = "y" if kernel == "dot" else "w"
        return Problem(kernel, {"x": x, name: other}, _reference(kernel, x, other))
    if kernel == "max":
        if n == 0:
            return None
        x = _values(rng, (n,), dtype, 10**6)
        return Problem(kernel, {"x": x}, _reference(kernel, x))
    if kernel == "histogram":
        x = rng.integers(0, HISTOGRAM_BINS, size=n).astype(dtype)
        return Problem(kernel, {"x": x}, _reference(kernel, x, HISTOGRAM_BINS),
                       size_args={"nbins": HISTOGRAM_BINS})
    if kernel == "heat_step_1d":
        u, alpha = rng.standard_normal(n).astype(dtype), t(0.25)
        return Problem(kernel, {"u": u, "alpha": alpha}, _reference(kernel, u, alpha),
                       exact=False)
    if kernel == "heat_steps_1d":
        u, alpha, steps = rng.standard_normal(n).astype(dtype), t(0.25), n % 4
        return Problem(kernel, {"u": u, "alpha": alpha, "steps": steps},
                       _reference(kernel, u, alpha, steps), exact=False)
    if kernel == "laplacian_2d":
        u = rng.standard_normal((n, 6)).astype(dtype)
        return Problem(kernel, {"u": u}, _reference(kernel, u), exact=False)
    if kernel in ("halo_exchange_1d", "halo_exchange_2d"):
        width = n % 3
        shape = (3 * width + n,) if kernel.endswith("1d") else (3 * width + n, 3 * width + n + 1)
        a = rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
        return Problem(kernel, {"a": a, "width": width}, _reference(kernel, a, width))
    if kernel in ("matmul", "matmul_tiled"):
        a, b = _values(rng, (n, 17), dtype, 8), _values(rng, (17, 3), dtype, 8)
        return Problem(kernel, {"a": a, "b": b}, _reference(kernel, a, b))
    raise KeyError(f"no direct check for {kernel!r}")


def assert_matches(problem: Problem, actual: np.ndarray, context: str) -> None:
    """``actual`` equals the expected result: bit for bit where the inputs make it exact,
    else under the kernel's tolerance rule (the one every other check of it applies)."""
    expected = problem.expected
    label = f"{context} {problem.describe()}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype} [{label}]"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape} [{label}]"
    if problem.exact:
        np.testing.assert_array_equal(actual, expected, err_msg=label)
        return
    rule = tolerance_of(problem.kernel, problem.inputs, expected)
    wrong = rule.mismatches(actual, expected)
    assert not wrong.any(), (f"{int(wrong.sum())} of {wrong.size} elements off, first at "
                             f"{np.argwhere(wrong)[0].tolist()}; rule: {rule} [{label}]")


# -- running an implementation ----------------------------------------------------------------
def _initial_out(problem: Problem) -> np.ndarray:
    dtype = problem.expected.dtype
    if problem.out_init == "zero":
        return np.zeros((), dtype)
    if problem.out_init == "lowest":
        return np.array(-np.inf if dtype.kind == "f" else np.iinfo(dtype).min, dtype=dtype)
    return poison_value(dtype)


class _Input:
    """A device input, plain or as a strided/transposed view of a larger buffer."""

    def __init__(self, backend: Any, host: np.ndarray, strided: bool) -> None:
        self.backend, self.host = backend, host
        if strided and host.ndim == 1:
            parent = np.zeros(2 * host.shape[0] + 1, host.dtype)
            parent[1::2] = host
            self.parent_host = parent
            self.parent = backend.to_device(parent)
            self.view = slice_view(self.parent, (slice(1, None, 2),))
        elif strided and host.ndim == 2:
            self.parent_host = np.ascontiguousarray(host.T)
            self.parent = backend.to_device(self.parent_host)
            self.view = transpose_view(self.parent)
        else:
            self.parent_host = host.copy()
            self.parent = backend.to_device(self.parent_host)
            self.view = self.parent

    def unchanged(self) -> bool:
        after = np.asarray(self.backend.to_host(self.parent))
        return bool(np.all(same_bits(after, self.parent_host)))


def run_out_style(backend: Any, func: Callable[..., Any], problem: Problem, *,
                  strided: bool = False) -> np.ndarray:
    """Call ``func`` with device inputs and a guard-banded ``out``; check guards and inputs."""
    inputs: dict[str, Any] = {}
    arrays: dict[str, _Input] = {}
    guarded: GuardedBuffer | None = None
    for name, value in problem.inputs.items():
        if name == problem.in_place:
            guarded = GuardedBuffer(backend, name, value.shape, value.dtype, value)
            inputs[name] = guarded.view
        elif isinstance(value, np.ndarray):
            arrays[name] = _Input(backend, value, strided)
            inputs[name] = arrays[name].view
        else:
            inputs[name] = value
    if guarded is None:
        guarded = GuardedBuffer(backend, "out", problem.expected.shape, problem.expected.dtype,
                                _initial_out(problem))
        inputs["out"] = guarded.view
    func(**inputs)
    backend.synchronize()
    readback = guarded.read()
    assert readback.ok, f"{readback.describe()} [{problem.describe()}]"
    for name, array in arrays.items():
        assert array.unchanged(), f"the kernel wrote its input {name} [{problem.describe()}]"
    return readback.region


def run_return_style(backend: Any, func: Callable[..., Any], problem: Problem) -> np.ndarray:
    """Call a returning (JAX) ``func``; in-place kernels return the updated array."""
    inputs = {name: backend.to_device(value) if isinstance(value, np.ndarray) else value
              for name, value in problem.inputs.items()}
    result = func(**inputs, **(problem.size_args or {}))
    for name, value in problem.inputs.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(np.asarray(backend.to_host(inputs[name])), value,
                                  equal_nan=value.dtype.kind == "f"), f"input {name} changed"
    return np.asarray(backend.to_host(result))


def check_implementation(backend: Any, func: Callable[..., Any], kernel: str, *,
                         strided: bool = False, sizes: tuple[int, ...] = SIZES) -> int:
    """Check ``func`` on every dtype and size of ``kernel``; return how many calls it took."""
    import inspect

    in_place = CATALOG[kernel].in_place is not None
    writes_out = "out" in inspect.signature(func).parameters or (in_place
                                                                  and backend.mutable_arrays)
    calls = 0
    for dtype in dtypes_of(kernel):
        for n in sizes:
            problem = make_problem(kernel, dtype, n)
            if problem is None:
                continue
            context = f"{backend.name} n={n} dtype={dtype} strided={strided}"
            if writes_out:
                actual = run_out_style(backend, func, problem, strided=strided)
            else:
                actual = run_return_style(backend, func, problem)
            assert_matches(problem, actual, context)
            calls += 1
    return calls


#: (shape, launch): blocks of 1, 32, odd sizes and 1024 threads; the grid-stride
#: grid covers fewer threads than elements.
INDEX_MAP_LAUNCHES: dict[str, list[tuple[tuple[int, ...], LaunchConfig]]] = {
    "index_map_1d": [((37,), LaunchConfig((37,), (1,))), ((37,), LaunchConfig((2,), (32,))),
                     ((1000,), LaunchConfig((1,), (1024,)))],
    "index_map_2d": [((5, 9), LaunchConfig((3, 2), (3, 3))),
                     ((33, 7), LaunchConfig((1, 2), (7, 32)))],
    "index_map_3d": [((3, 4, 5), LaunchConfig((2, 2, 1), (3, 2, 3))),
                     ((2, 3, 33), LaunchConfig((2, 1, 1), (32, 3, 2)))],
    "index_map_grid_stride": [((1000,), LaunchConfig((3,), (7,))),
                              ((37,), LaunchConfig((1,), (1,)))],
}


def check_index_map(backend: Any, func: Callable[..., Any], kernel: str) -> None:
    """The thread with global index i writes element i, on each launch of ``kernel``."""
    from pytest_gpucheck.reference_kernels import indexing

    for dtype in dtypes_of(kernel):
        for shape, launch in INDEX_MAP_LAUNCHES[kernel]:
            out = GuardedBuffer(backend, "out", shape, dtype, poison_value(dtype))
            func(out=out.view, launch=launch)
            backend.synchronize()
            readback = out.read()
            assert readback.ok, f"{readback.describe()} [{kernel} {launch}]"
            expected = getattr(indexing, kernel)(shape, dtype)
            np.testing.assert_array_equal(readback.region, expected,
                                          err_msg=f"{kernel} {shape} {dtype} {launch}")


# -- monte_carlo_pi ---------------------------------------------------------------------------
#: z-score accepted for the pi estimate: a correct generator fails about once in 1.7 million.
PI_Z = 5.0


def check_monte_carlo_samples(samples: np.ndarray, dtype: str) -> None:
    """Samples are (n, 2) of ``dtype`` in ``[0, 1)``, pairwise distinct, and estimate pi."""
    from pytest_gpucheck.reference_kernels.reductions import (
        monte_carlo_pi,
        monte_carlo_pi_standard_error,
    )

    n = samples.shape[0]
    assert samples.shape == (n, 2), samples.shape
    assert samples.dtype == np.dtype(dtype), samples.dtype
    assert np.all((samples >= 0) & (samples < 1)), "samples outside [0, 1)"
    # Threads sharing one stream would repeat rows; independent samples almost never do.
    assert len(np.unique(samples, axis=0)) > 0.99 * n, "repeated samples: a shared stream?"
    assert len(np.unique(samples[:, 0])) > 0.99 * n, "u repeats: a shared stream?"
    estimate = monte_carlo_pi(samples)
    error = abs(estimate - np.pi) / monte_carlo_pi_standard_error(n)
    assert error < PI_Z, f"pi estimate {estimate} is {error:.1f} standard errors off"
