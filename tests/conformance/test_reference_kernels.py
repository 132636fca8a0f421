"""Each NumPy reference against a naive Python loop on small hypothesis inputs.

The loops spell the contract of ``docs/kernels.md`` one element at a time, so a
vectorised reference that slices one cell too far, promotes to the wrong dtype
or modifies its argument disagrees with them.  Floating reductions are compared
with the exactly rounded result (``math.fsum``) within the float64 accumulation
error the references document, plus the final rounding.
"""

from __future__ import annotations

import decimal
import doctest
import importlib
import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal, assert_array_max_ulp

from pytest_gpucheck import reference_kernels
from pytest_gpucheck.reference_kernels import (
    FAMILIES,
    KERNELS,
    elementwise,
    indexing,
    linalg,
    reductions,
    stencils,
)

FLOATS = (np.float32, np.float64)
INTEGERS = (np.int32, np.int64)
SMALL = settings(max_examples=25, deadline=None)


def arrays(dtype: Any, shape: Any, *, magnitude: float = 1e3) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``dtype``: finite floats within ``magnitude``, integers over their full range."""
    if np.issubdtype(dtype, np.floating):
        elements = st.floats(-magnitude, magnitude, width=np.dtype(dtype).itemsize * 8)
    else:
        elements = None
    return hnp.arrays(dtype, shape, elements=elements)


def wrap(value: int, dtype: Any) -> int:
    """``value`` reduced to ``dtype``'s range the way two's-complement arithmetic wraps."""
    info = np.iinfo(dtype)
    return (value - info.min) % (1 << info.bits) + info.min


def call_unmodified(reference: Callable[..., Any], *args: Any) -> Any:
    """Call ``reference`` and assert it left every array argument as it was."""
    copies = [np.array(arg, copy=True) if isinstance(arg, np.ndarray) else None for arg in args]
    result = reference(*args)
    for arg, copy in zip(args, copies, strict=True):
        if copy is not None:
            assert_array_equal(arg, copy, err_msg=f"{reference.__name__} modified its input")
    return result


def assert_near_exact(result: np.ndarray, exact: float, abs_sum: float, terms: int) -> None:
    """``result[0]`` within float64 accumulation error of ``exact``, plus one final rounding."""
    dtype = result.dtype
    bound = 1.01 * terms * 2.0**-53 * abs_sum + float(np.spacing(dtype.type(abs(exact))))
    assert abs(float(result[0]) - exact) <= bound, (result, exact, bound)


# -- registry ------------------------------------------------------------------

def test_every_contract_kernel_has_a_reference_and_a_family() -> None:
    contract = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"
    lines = contract.read_text(encoding="utf-8").splitlines()
    documented = {
        line.split("`")[1]
        for line in lines
        if line.startswith("| ") and line.count("`") >= 2 and not line.startswith("| family")
    }
    assert set(KERNELS) == documented
    assert set(FAMILIES) == documented
    assert set(FAMILIES.values()) == {
        "elementwise", "indexing", "reductions", "stencils", "halos", "linalg",
        "ufuncs", "transforms", "multi-device", "grid-sync", "fused",
    }
    for name, reference in KERNELS.items():
        assert reference.__name__ == name
        assert reference.__doc__


@pytest.mark.parametrize(
    "module", ["", ".elementwise", ".indexing", ".reductions", ".stencils", ".linalg",
               ".ufuncs", ".transforms", ".multi_device", ".cooperative", ".catalog",
               ".fused", ".value_classes"]
)
def test_docstring_examples_run(module: str) -> None:
    found = doctest.testmod(importlib.import_module(f"pytest_gpucheck.reference_kernels{module}"))
    assert found.attempted > 0
    assert found.failed == 0


# -- elementwise ---------------------------------------------------------------

@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), n=st.integers(0, 20))
def test_vector_add(data: st.DataObject, dtype: Any, n: int) -> None:
    a = data.draw(arrays(dtype, n))
    b = data.draw(arrays(dtype, n))
    result = call_unmodified(elementwise.vector_add, a, b)
    assert result.dtype == dtype
    expected: list[Any]
    if np.issubdtype(dtype, np.integer):
        expected = [wrap(int(p) + int(q), dtype) for p, q in zip(a, b, strict=True)]
    else:
        # Sum in double then one rounding: equal to the float32 sum (53 >= 2 * 24 + 2).
        expected = [float(p) + float(q) for p, q in zip(a, b, strict=True)]
    assert_array_equal(result, np.array(expected, dtype=dtype))


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS), n=st.integers(0, 20))
def test_saxpy_rounds_product_and_sum_in_the_array_dtype(
    data: st.DataObject, dtype: Any, n: int
) -> None:
    alpha = data.draw(st.floats(-10, 10))
    x = data.draw(arrays(dtype, n))
    y = data.draw(arrays(dtype, n))
    result = call_unmodified(elementwise.saxpy, np.float64(alpha), x, y)
    assert result.dtype == dtype
    a = dtype(alpha)
    products = [dtype(float(a) * float(p)) for p in x]
    expected = [dtype(float(t) + float(q)) for t, q in zip(products, y, strict=True)]
    assert_array_equal(result, np.array(expected, dtype=dtype))


def _correctly_rounded_sigmoid(value: float) -> float:
    """Sigmoid to 40 significant digits (``Decimal.exp`` is correctly rounded), then to float."""
    with decimal.localcontext() as context:
        context.prec = 40
        return float(1 / (1 + (-decimal.Decimal(value)).exp()))


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS), n=st.integers(0, 20))
def test_sigmoid(data: st.DataObject, dtype: Any, n: int) -> None:
    x = data.draw(arrays(dtype, n, magnitude=1e3))
    result = call_unmodified(elementwise.sigmoid, x)
    assert result.dtype == dtype
    expected = np.array([_correctly_rounded_sigmoid(float(v)) for v in x], dtype=dtype)
    # 1 ULP: the reference's own rounding plus float64 -> float32 double rounding.
    assert_array_max_ulp(result, expected, maxulp=1)


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS),
       shape=st.tuples(st.integers(0, 5), st.integers(0, 5)))
def test_add_one_2d(data: st.DataObject, dtype: Any, shape: tuple[int, int]) -> None:
    a = data.draw(arrays(dtype, shape))
    result = call_unmodified(elementwise.add_one_2d, a)
    assert result.dtype == dtype
    expected = np.empty(shape, dtype=dtype)
    for r in range(shape[0]):
        for c in range(shape[1]):
            if np.issubdtype(dtype, np.integer):
                expected[r, c] = wrap(int(a[r, c]) + 1, dtype)
            else:
                expected[r, c] = float(a[r, c]) + 1.0
    assert_array_equal(result, expected)


# -- indexing ------------------------------------------------------------------

@SMALL
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       dtype=st.sampled_from(INTEGERS))
def test_index_maps_record_the_row_major_flat_index(shape: list[int], dtype: Any) -> None:
    by_rank: dict[int, list[Callable[..., np.ndarray]]] = {
        1: [indexing.index_map_1d, indexing.index_map_grid_stride],
        2: [indexing.index_map_2d],
        3: [indexing.index_map_3d],
    }
    expected = np.empty(shape, dtype=dtype)
    # itertools.product walks the indices in row-major order: the last axis (x) fastest.
    for counter, index in enumerate(itertools.product(*(range(n) for n in shape))):
        expected[index] = counter
    for reference in by_rank[len(shape)]:
        result = reference(tuple(shape), dtype=dtype)
        assert result.dtype == dtype
        assert_array_equal(result, expected)
    if len(shape) == 1:
        assert_array_equal(indexing.index_map_1d(shape[0], dtype=dtype), expected)


def test_index_map_rejects_a_shape_of_the_wrong_rank() -> None:
    with pytest.raises(ValueError, match="2-D"):
        indexing.index_map_2d((3,))  # type: ignore[arg-type]


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS),
       shape=st.tuples(st.integers(0, 5), st.integers(0, 5)), strided=st.booleans())
def test_transpose(data: st.DataObject, dtype: Any, shape: tuple[int, int], strided: bool) -> None:
    a = data.draw(arrays(dtype, shape))
    if strided:  # a transposed view: the reference must not assume C order
        a = a.T
    result = call_unmodified(indexing.transpose, a)
    expected = np.empty((a.shape[1], a.shape[0]), dtype=dtype)
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            expected[c, r] = a[r, c]
    assert_array_equal(result, expected)
    assert result.flags.c_contiguous


# -- reductions ----------------------------------------------------------------

def _check_reduction(result: np.ndarray, dtype: Any, terms: list[Any]) -> None:
    """Compare with the exact sum of ``terms`` (Python ints wrapped, or floats via fsum)."""
    assert result.shape == (1,)
    assert result.dtype == dtype
    if np.issubdtype(dtype, np.integer):
        assert int(result[0]) == wrap(sum(int(t) for t in terms), dtype)
    else:
        exact = math.fsum(terms)
        assert_near_exact(result, exact, math.fsum(abs(t) for t in terms), len(terms) + 1)


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), n=st.integers(0, 40))
def test_sum(data: st.DataObject, dtype: Any, n: int) -> None:
    x = data.draw(arrays(dtype, n))
    result = call_unmodified(reductions.sum, x)
    _check_reduction(result, dtype, [v.item() for v in x])


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), n=st.integers(0, 40))
def test_dot_weighted_sum_and_sum_of_squares(data: st.DataObject, dtype: Any, n: int) -> None:
    x = data.draw(arrays(dtype, n))
    y = data.draw(arrays(dtype, n))
    # Python ints multiply exactly; floats multiply in double (exact for float32).
    products = [p.item() * q.item() for p, q in zip(x, y, strict=True)]
    _check_reduction(call_unmodified(reductions.dot, x, y), dtype, products)
    _check_reduction(call_unmodified(reductions.weighted_sum, x, y), dtype, products)
    squares = [p.item() * p.item() for p in x]
    _check_reduction(call_unmodified(reductions.sum_of_squares, x), dtype, squares)


def test_float32_reductions_accumulate_in_float64() -> None:
    # float32 accumulation loses the 1 next to 1e8; float64 keeps it.
    x = np.array([1e8, 1.0, -1e8], np.float32)
    ones = np.ones(3, np.float32)
    assert reductions.sum(x)[0] == 1.0
    assert reductions.dot(x, ones)[0] == 1.0
    assert linalg.matmul(x.reshape(1, 3), ones.reshape(3, 1))[0, 0] == 1.0
    # A long float32 inner product accumulated in float32 drifts several ULPs;
    # accumulated in float64 it stays within one rounding of the exact value.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4096)).astype(np.float32)
    b = rng.standard_normal((4096, 2)).astype(np.float32)
    exact = np.array([[math.fsum(a[i].astype(float) * b[:, j].astype(float)) for j in range(2)]
                      for i in range(2)])
    assert_array_max_ulp(linalg.matmul(a, b), exact.astype(np.float32), maxulp=1)


def test_float_sum_of_integer_values_is_exact() -> None:
    x = np.arange(1, 4097, dtype=np.float32)
    assert reductions.sum(x)[0] == 4096 * 4097 // 2


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), n=st.integers(1, 40))
def test_max(data: st.DataObject, dtype: Any, n: int) -> None:
    x = data.draw(arrays(dtype, n))
    result = call_unmodified(reductions.max, x)
    assert result.dtype == dtype
    assert result.shape == (1,)
    best = x[0]
    for v in x[1:]:
        if v > best:
            best = v
    assert result[0] == best


def test_max_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        reductions.max(np.array([], np.float32))


@SMALL
@given(data=st.data(), dtype=st.sampled_from(INTEGERS), nbins=st.integers(1, 10),
       n=st.integers(0, 40))
def test_histogram(data: st.DataObject, dtype: Any, nbins: int, n: int) -> None:
    x = data.draw(hnp.arrays(dtype, n, elements=st.integers(-3, nbins + 2)))
    result = call_unmodified(reductions.histogram, x, nbins)
    assert result.dtype == dtype
    expected = [0] * nbins
    for v in x:
        if 0 <= v < nbins:
            expected[int(v)] += 1
    assert result.tolist() == expected


@pytest.mark.parametrize("dtype", INTEGERS)
def test_histogram_leaves_out_values_outside_the_bins(dtype: Any) -> None:
    """As ``np.histogram`` leaves out values outside its range: not clamped, not wrapped."""
    info = np.iinfo(dtype)
    x = np.array([info.min, -1, 0, 4, 5, info.max], dtype)
    assert reductions.histogram(x, 5).tolist() == [1, 0, 0, 0, 1]


@SMALL
@given(samples=hnp.arrays(np.float64, st.tuples(st.integers(1, 30), st.just(2)),
                          elements=st.floats(0, 1, exclude_max=True)))
# 0.6**2 + 0.8**2 rounds to exactly 1.0: on the circle, hence outside ("< 1").
@example(samples=np.array([[0.6, 0.8], [0.1, 0.1]]))
def test_monte_carlo_pi_counts_points_inside_the_quarter_disc(samples: np.ndarray) -> None:
    inside = sum(1 for u, v in samples if u * u + v * v < 1.0)
    assert call_unmodified(reductions.monte_carlo_pi, samples) == 4.0 * inside / len(samples)


def test_monte_carlo_pi_estimate_is_within_its_standard_error() -> None:
    n = 200_000
    samples = np.random.default_rng(20261121).random((n, 2))
    error = abs(reductions.monte_carlo_pi(samples) - math.pi)
    # 5 standard errors: a correct generator fails this about once in 1.7 million seeds.
    assert error < 5 * reductions.monte_carlo_pi_standard_error(n)
    p = math.pi / 4
    assert reductions.monte_carlo_pi_standard_error(n) == pytest.approx(
        4 * math.sqrt(p * (1 - p) / n)
    )


# -- stencils and halos --------------------------------------------------------

def _naive_heat_step(u: np.ndarray, alpha: Any) -> np.ndarray:
    t = u.dtype.type
    out = np.zeros_like(u)
    for i in range(1, len(u) - 1):
        out[i] = u[i] + t(alpha) * (u[i - 1] - t(2) * u[i] + u[i + 1])
    return out


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS), n=st.integers(0, 12),
       steps=st.integers(0, 3))
def test_heat_steps(data: st.DataObject, dtype: Any, n: int, steps: int) -> None:
    u = data.draw(arrays(dtype, n, magnitude=10))
    alpha = data.draw(st.floats(0, 0.5))
    one = call_unmodified(stencils.heat_step_1d, u, alpha)
    assert one.dtype == dtype
    assert_array_equal(one, _naive_heat_step(u, alpha))
    expected = u.copy()
    for _ in range(steps):
        expected = _naive_heat_step(expected, alpha)
    several = call_unmodified(stencils.heat_steps_1d, u, alpha, steps)
    assert several.dtype == dtype
    assert_array_equal(several, expected)


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS),
       shape=st.tuples(st.integers(0, 6), st.integers(0, 6)))
def test_laplacian_2d(data: st.DataObject, dtype: Any, shape: tuple[int, int]) -> None:
    u = data.draw(arrays(dtype, shape, magnitude=100) if np.issubdtype(dtype, np.floating)
                  else hnp.arrays(dtype, shape, elements=st.integers(-1000, 1000)))
    result = call_unmodified(stencils.laplacian_2d, u)
    assert result.dtype == dtype
    t = u.dtype.type
    expected = np.zeros(shape, dtype=dtype)
    for r in range(1, shape[0] - 1):
        for c in range(1, shape[1] - 1):
            expected[r, c] = (u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1]
                              - t(4) * u[r, c])
    assert_array_equal(result, expected)


def _naive_halo_1d(a: np.ndarray, w: int) -> np.ndarray:
    """The contract's two slice assignments, one cell at a time."""
    a = a.copy()
    n = len(a)
    for k in range(w):
        a[k] = a[n - 2 * w + k]
        a[n - w + k] = a[w + k]
    return a


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), width=st.integers(0, 3))
def test_halo_exchange_1d(data: st.DataObject, dtype: Any, width: int) -> None:
    n = data.draw(st.integers(3 * width, 3 * width + 8))
    a = data.draw(arrays(dtype, n))
    result = call_unmodified(stencils.halo_exchange_1d, a, width)
    assert result.dtype == dtype
    assert_array_equal(result, _naive_halo_1d(a, width))


@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS), width=st.integers(0, 2))
def test_halo_exchange_2d_exchanges_rows_then_columns_corners_included(
    data: st.DataObject, dtype: Any, width: int
) -> None:
    shape = data.draw(st.tuples(st.integers(3 * width, 3 * width + 5),
                                st.integers(3 * width, 3 * width + 5)))
    a = data.draw(arrays(dtype, shape))
    result = call_unmodified(stencils.halo_exchange_2d, a, width)
    assert result.dtype == dtype
    # Rows first (interior and ghost columns alike), then every row's columns,
    # ghost rows included: that second pass is what fills the corners.
    expected = a.copy()
    for c in range(shape[1]):
        expected[:, c] = _naive_halo_1d(expected[:, c], width)
    for r in range(shape[0]):
        expected[r, :] = _naive_halo_1d(expected[r, :], width)
    assert_array_equal(result, expected)


@pytest.mark.parametrize(
    ("reference", "array"),
    [(stencils.halo_exchange_1d, np.zeros(5)), (stencils.halo_exchange_2d, np.zeros((6, 5)))],
)
def test_halo_exchange_needs_three_widths_per_axis(
    reference: Callable[..., np.ndarray], array: np.ndarray
) -> None:
    with pytest.raises(ValueError, match="3 \\* width = 6"):
        reference(array, 2)


# -- linalg --------------------------------------------------------------------

@SMALL
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTEGERS),
       dims=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)))
def test_matmul_and_tiled(data: st.DataObject, dtype: Any, dims: tuple[int, int, int]) -> None:
    m, k, n = dims
    a = data.draw(arrays(dtype, (m, k)))
    b = data.draw(arrays(dtype, (k, n)))
    for reference in (linalg.matmul, linalg.matmul_tiled):
        result = call_unmodified(reference, a, b)
        assert result.dtype == dtype
        assert result.shape == (m, n)
        for i in range(m):
            for j in range(n):
                terms = [a[i, p].item() * b[p, j].item() for p in range(k)]
                _check_reduction(result[i, j : j + 1], dtype, terms)


def test_package_exports_the_family_modules() -> None:
    assert reference_kernels.KERNELS["halo_exchange_2d"] is stencils.halo_exchange_2d
