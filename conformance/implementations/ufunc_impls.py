"""Bundled ufunc implementations: ``@vectorize`` and ``@guvectorize`` as Numba tutorials
teach them (targets ``cpu``, ``parallel`` and ``cuda``), NumPy's ``np.vectorize`` with a
layout signature, ``jnp.vectorize``, CuPy's ``cupy.vectorize`` and torch broadcasting.

The ufuncs are built in cached factories on first call, so importing this module
imports no framework.  A Numba ufunc built with explicit signatures is a NumPy
ufunc: it broadcasts, accepts ``out=`` (any strides) and picks its loop by the
input dtypes.

The CUDA simulator cannot build ``target='cuda'`` ufuncs (checked on numba-cuda
0.30.4), so the ``numba-cudasim`` cells are not applicable with the upstream
error; the ``target='cuda'`` implementations are registered for ``numba-cuda``
and have never run on a GPU in this project's CI.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_gpucheck.registry import implements

from ._applicability import not_applicable_elsewhere

KERNELS = ("ufunc_saxpy", "gufunc_dot", "gufunc_laplacian_2d")
FLOAT_TYPES = ("float32", "float64")
DOT_TYPES = ("float32", "float64", "int32", "int64")


def _saxpy_scalar(alpha: Any, x: Any, y: Any) -> Any:
    return alpha * x + y


def _dot_core(x: Any, y: Any, out: Any) -> None:
    # Floats accumulate in float64 and integers in int64 (Numba's type unification
    # of the literal 0 with the products), then round once into out.
    acc = 0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    out[0] = acc


def _laplacian_core(u: Any, out: Any) -> None:
    m, n = u.shape
    for i in range(m):
        for j in range(n):
            if 0 < i < m - 1 and 0 < j < n - 1:
                out[i, j] = (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                             - 4 * u[i, j])
            else:
                out[i, j] = 0


@functools.cache
def numba_vectorize(target: str) -> Any:
    """``@vectorize`` of ``alpha * x + y`` for ``target`` (built on first call)."""
    import numba

    signatures = [f"{t}({t}, {t}, {t})" for t in FLOAT_TYPES]
    return numba.vectorize(signatures, target=target)(_saxpy_scalar)


@functools.cache
def numba_guvectorize(kernel: str, target: str) -> Any:
    """``@guvectorize`` of ``gufunc_dot`` / ``gufunc_laplacian_2d`` for ``target``."""
    import numba

    if kernel == "gufunc_dot":
        signatures = [f"void({t}[:], {t}[:], {t}[:])" for t in DOT_TYPES]
        return numba.guvectorize(signatures, "(n),(n)->()", target=target)(_dot_core)
    signatures = [f"void({t}[:, :], {t}[:, :])" for t in FLOAT_TYPES]
    return numba.guvectorize(signatures, "(m,n)->(m,n)", target=target)(_laplacian_core)


# -- numba-cpu: targets cpu and parallel ------------------------------------------------------
for _target in ("cpu", "parallel"):

    def _saxpy(alpha: Any, x: Any, y: Any, out: Any, _target: str = _target) -> None:
        numba_vectorize(_target)(alpha, x, y, out=out)

    def _dot(x: Any, y: Any, out: Any, _target: str = _target) -> None:
        numba_guvectorize("gufunc_dot", _target)(x, y, out=out)

    def _laplacian(u: Any, out: Any, _target: str = _target) -> None:
        numba_guvectorize("gufunc_laplacian_2d", _target)(u, out=out)

    for _kernel, _func, _kind in (("ufunc_saxpy", _saxpy, "vectorize"),
                                  ("gufunc_dot", _dot, "guvectorize"),
                                  ("gufunc_laplacian_2d", _laplacian, "guvectorize")):
        _func.__name__ = _func.__qualname__ = f"{_kernel}_{_kind}_{_target}"
        implements(_kernel, backend="numba-cpu", name=f"{_kind}-{_target}",
                   origin="bundled")(_func)


# -- numba-cuda: target cuda (returns device arrays) -------------------------------------------
@implements("ufunc_saxpy", backend="numba-cuda", name="vectorize-cuda", origin="bundled")
def ufunc_saxpy_vectorize_cuda(alpha: Any, x: Any, y: Any) -> Any:
    """``@vectorize(target='cuda')`` on device arrays; returns a device array."""
    return numba_vectorize("cuda")(np.dtype(x.dtype).type(alpha), x, y)


@implements("gufunc_dot", backend="numba-cuda", name="guvectorize-cuda", origin="bundled")
def gufunc_dot_guvectorize_cuda(x: Any, y: Any) -> Any:
    """``@guvectorize('(n),(n)->()', target='cuda')``; returns a device array."""
    return numba_guvectorize("gufunc_dot", "cuda")(x, y)


@implements("gufunc_laplacian_2d", backend="numba-cuda", name="guvectorize-cuda",
            origin="bundled")
def gufunc_laplacian_2d_guvectorize_cuda(u: Any) -> Any:
    """``@guvectorize('(m,n)->(m,n)', target='cuda')``; returns a device array."""
    return numba_guvectorize("gufunc_laplacian_2d", "cuda")(u)


# -- numpy: broadcasting ufuncs and np.vectorize with a layout ---------------------------------
@implements("ufunc_saxpy", backend="numpy", name="ufunc", origin="bundled")
def ufunc_saxpy_numpy(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """NumPy's own ufuncs: multiply then add, broadcast, into ``out``."""
    np.add(np.multiply(x.dtype.type(alpha), x), y, out=out)


@implements("gufunc_dot", backend="numpy", name="np-vectorize", origin="bundled")
def gufunc_dot_numpy(x: Any, y: Any) -> Any:
    """``np.vectorize(..., signature='(n),(n)->()')``."""
    dtype = np.result_type(x, y)

    def core(a: Any, b: Any) -> Any:
        return np.sum(np.multiply(a, b, dtype=dtype), dtype=dtype)

    return np.vectorize(core, signature="(n),(n)->()", otypes=[dtype])(x, y)


@implements("gufunc_laplacian_2d", backend="numpy", name="np-vectorize", origin="bundled")
def gufunc_laplacian_2d_numpy(u: Any) -> Any:
    """``np.vectorize(..., signature='(m,n)->(m,n)')``."""

    def core(a: Any) -> Any:
        out = np.zeros(a.shape, dtype=a.dtype)
        if a.shape[0] > 2 and a.shape[1] > 2:
            out[1:-1, 1:-1] = (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]
                               - a.dtype.type(4) * a[1:-1, 1:-1])
        return out

    return np.vectorize(core, signature="(m,n)->(m,n)", otypes=[u.dtype])(u)


# -- JAX: jnp.vectorize ------------------------------------------------------------------------
@functools.cache
def _jax_ufuncs() -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def dot_core(a: Any, b: Any) -> Any:
        return jnp.sum(a * b, dtype=a.dtype)

    def laplacian_core(a: Any) -> Any:
        out = jnp.zeros_like(a)
        if a.shape[0] > 2 and a.shape[1] > 2:
            out = out.at[1:-1, 1:-1].set(a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2]
                                         + a[1:-1, 2:] - 4 * a[1:-1, 1:-1])
        return out

    return {
        "ufunc_saxpy": jax.jit(jnp.vectorize(_saxpy_scalar)),
        "gufunc_dot": jax.jit(jnp.vectorize(dot_core, signature="(n),(n)->()")),
        "gufunc_laplacian_2d": jax.jit(jnp.vectorize(laplacian_core,
                                                     signature="(m,n)->(m,n)")),
    }


def jax_ufunc_saxpy(alpha: Any, x: Any, y: Any) -> Any:
    """``jnp.vectorize(lambda a, x, y: a * x + y)`` under ``jax.jit``."""
    return _jax_ufuncs()["ufunc_saxpy"](np.dtype(x.dtype).type(alpha), x, y)


def jax_gufunc_dot(x: Any, y: Any) -> Any:
    """``jnp.vectorize(core, signature='(n),(n)->()')`` under ``jax.jit``."""
    return _jax_ufuncs()["gufunc_dot"](x, y)


def jax_gufunc_laplacian_2d(u: Any) -> Any:
    """``jnp.vectorize(core, signature='(m,n)->(m,n)')`` under ``jax.jit``."""
    return _jax_ufuncs()["gufunc_laplacian_2d"](u)


for _backend in ("jax-cpu", "jax-gpu"):
    implements("ufunc_saxpy", backend=_backend, name="jnp-vectorize",
               origin="bundled")(jax_ufunc_saxpy)
    implements("gufunc_dot", backend=_backend, name="jnp-vectorize",
               origin="bundled")(jax_gufunc_dot)
    implements("gufunc_laplacian_2d", backend=_backend, name="jnp-vectorize",
               origin="bundled")(jax_gufunc_laplacian_2d)


# -- CuPy and torch ----------------------------------------------------------------------------
@functools.cache
def _cupy_saxpy() -> Any:
    import cupy

    return cupy.vectorize(_saxpy_scalar)


@implements("ufunc_saxpy", backend="cupy", name="cupy-vectorize", origin="bundled")
def ufunc_saxpy_cupy(alpha: Any, x: Any, y: Any) -> Any:
    """``cupy.vectorize`` (compiled to an elementwise kernel); never run on a GPU here."""
    return _cupy_saxpy()(np.dtype(x.dtype).type(alpha), x, y)


def ufunc_saxpy_torch(alpha: Any, x: Any, y: Any, out: Any) -> None:
    """torch's broadcasting multiply and add, into ``out``."""
    import torch

    torch.add(torch.mul(x, float(alpha)), y, out=out)


for _backend in ("torch-cpu", "torch-cuda"):
    implements("ufunc_saxpy", backend=_backend, name="torch", origin="bundled")(
        ufunc_saxpy_torch)


_SIMULATOR = ("not applicable: the CUDA simulator (numba-cuda 0.30.4, checked) cannot build "
              "target='cuda' ufuncs: @vectorize fails with \"AttributeError: 'FakeOverload' "
              "object has no attribute 'signature'\", @guvectorize with \"AttributeError: "
              "module 'numba.cuda' has no attribute 'is_cuda_array'\" (upstream); the "
              "numba-cuda cells run them on a GPU")
not_applicable_elsewhere(
    ["ufunc_saxpy"], ["numpy", "numba-cpu", "numba-cuda", "jax-cpu", "jax-gpu", "cupy",
                      "torch-cpu", "torch-cuda"],
    {"numba-cudasim": _SIMULATOR.removeprefix("not applicable: ")},
    "cuda.core compiles raw CUDA C; it has no ufunc builder (its raw kernels are checked "
    "by the elementwise suites)")
not_applicable_elsewhere(
    ["gufunc_dot", "gufunc_laplacian_2d"],
    ["numpy", "numba-cpu", "numba-cuda", "jax-cpu", "jax-gpu"],
    {"numba-cudasim": _SIMULATOR.removeprefix("not applicable: "),
     "cupy": "CuPy has no public generalized-ufunc builder (no guvectorize or layout "
             "signature); its elementwise and reduction kernels are checked by those suites",
     "cuda-python": "cuda.core compiles raw CUDA C; it has no generalized-ufunc builder",
     "torch-cpu": "torch has no generalized ufuncs with a layout signature; batching a core "
                  "function with torch.func.vmap is checked by the transforms suite",
     "torch-cuda": "torch has no generalized ufuncs with a layout signature; batching a core "
                   "function with torch.func.vmap is checked by the transforms suite"},
    "no generalized-ufunc builder")

__all__ = ["KERNELS", "numba_guvectorize", "numba_vectorize"]
