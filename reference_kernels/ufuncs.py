"""NumPy references of the ufunc kernels: ``ufunc_saxpy`` (what ``@vectorize`` builds),
``gufunc_dot`` (layout ``(n),(n)->()``) and ``gufunc_laplacian_2d`` (``(m,n)->(m,n)``).

A ufunc applies a scalar function element by element with NumPy's
broadcasting; a generalized ufunc applies a function of *core* dimensions
(the last axes, named in its layout) to every index of the leading *loop*
dimensions.  The references state both: they broadcast, and they loop over
the leading axes.
"""

from __future__ import annotations

import numpy as np

from .stencils import laplacian_2d


def ufunc_saxpy(alpha: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``alpha * x + y`` broadcast over ``x`` and ``y``, in their promoted dtype.

    ``alpha`` is converted to that dtype first (a float32 ufunc must stay
    float32); the product and the sum are rounded separately.

    >>> ufunc_saxpy(2.0, np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
    array([[2., 3., 4.],
           [2., 3., 4.]], dtype=float32)
    """
    dtype = np.result_type(x, y)
    return np.add(np.multiply(dtype.type(alpha), x, dtype=dtype), y, dtype=dtype)


def gufunc_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Layout ``(n),(n)->()``: the dot product of the last axes of ``x`` and ``y``.

    Floats accumulate in float64 and are rounded once to the dtype; integers
    are exact in their dtype.  ``n = 0`` gives 0.

    >>> gufunc_dot(np.arange(6.0).reshape(2, 3), np.ones((2, 3)))
    array([ 3., 12.])
    """
    dtype = np.result_type(x, y)
    if dtype.kind == "f":
        products = x.astype(np.float64) * y.astype(np.float64)
        return np.sum(products, axis=-1).astype(dtype)
    return np.sum(np.multiply(x, y, dtype=dtype), axis=-1, dtype=dtype)


def gufunc_laplacian_2d(u: np.ndarray) -> np.ndarray:
    """Layout ``(m,n)->(m,n)``: :func:`~pytest_gpucheck.reference_kernels.stencils.laplacian_2d` of
    every 2-D slice ``u[i]`` of a stack ``u`` of shape ``(b, m, n)``.

    >>> gufunc_laplacian_2d(np.stack([np.arange(9.0).reshape(3, 3) ** 2] * 2))[:, 1, 1]
    array([20., 20.])
    """
    if u.ndim != 3:
        raise ValueError(f"gufunc_laplacian_2d takes a (b, m, n) stack, got shape {u.shape}")
    out = np.zeros(u.shape, dtype=u.dtype)
    for i in range(u.shape[0]):
        out[i] = laplacian_2d(u[i])
    return out
