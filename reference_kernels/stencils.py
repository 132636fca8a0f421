"""NumPy references of the stencil kernels (``heat_step_1d``, ``heat_steps_1d``,
``laplacian_2d``) and of the periodic halo exchanges (``halo_exchange_1d``,
``halo_exchange_2d``).

Each returns a new array of the input's dtype and never modifies its
argument: the stencils return ``out``, the in-place halo exchanges return the
updated copy of ``a``.  Scalars (``alpha``) are converted to the array's dtype
first, as the kernel receives them as scalars of the kernel's dtype.
"""

from __future__ import annotations

import numpy as np


def heat_step_1d(u: np.ndarray, alpha: float) -> np.ndarray:
    """One explicit step of the 1-D heat equation, walls held at 0.

    ``out[i] = u[i] + alpha * (u[i-1] - 2 u[i] + u[i+1])`` for interior ``i``,
    ``out[0] = out[-1] = 0``.  Every ``out[i]`` reads the *old* ``u``, so an
    implementation that updates ``u`` in place is wrong.

    >>> heat_step_1d(np.array([0.0, 1.0, 4.0, 1.0, 0.0]), 0.25)
    array([0. , 1.5, 2.5, 1.5, 0. ])
    """
    if u.ndim != 1:
        raise ValueError(f"heat_step_1d takes a 1-D array, got shape {u.shape}")
    dtype = u.dtype
    a = dtype.type(alpha)
    out = np.zeros_like(u, dtype=dtype, order="C")
    if u.shape[0] > 2:
        centre = u[1:-1]
        out[1:-1] = centre + a * (u[:-2] - dtype.type(2) * centre + u[2:])
    return out


def heat_steps_1d(u: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """``steps`` successive :func:`heat_step_1d` steps (``steps = 0`` returns a copy of ``u``).

    >>> heat_steps_1d(np.array([0.0, 1.0, 4.0, 1.0, 0.0]), 0.25, 2)
    array([0.   , 1.375, 2.   , 1.375, 0.   ])
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    result = np.array(u, copy=True, order="C")
    for _ in range(steps):
        result = heat_step_1d(result, alpha)
    return result


def laplacian_2d(u: np.ndarray) -> np.ndarray:
    """Five-point Laplacian (unit spacing) on the interior; 0 on the boundary rows and columns.

    ``out[i, j] = u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4 u[i, j]``.

    >>> laplacian_2d(np.arange(9.0).reshape(3, 3) ** 2)
    array([[ 0.,  0.,  0.],
           [ 0., 20.,  0.],
           [ 0.,  0.,  0.]])
    """
    if u.ndim != 2:
        raise ValueError(f"laplacian_2d takes a 2-D array, got shape {u.shape}")
    dtype = u.dtype
    out = np.zeros_like(u, dtype=dtype, order="C")
    if u.shape[0] > 2 and u.shape[1] > 2:
        out[1:-1, 1:-1] = (
            u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
            - dtype.type(4) * u[1:-1, 1:-1]
        )
    return out


def _periodic_fill(a: np.ndarray, width: int) -> np.ndarray:
    """Fill the ghost cells of every axis of ``a`` periodically from its interior.

    After ``a[:w] = a[-2w:-w]`` and ``a[-w:] = a[w:2w]`` along each axis in
    turn, element ``i`` of an axis of length ``n`` holds interior element
    ``(i - w) mod (n - 2w)``; gathering with that index on every axis at once
    fills the corners too, exactly as exchanging axis 0 and then axis 1
    (ghost rows included) does.
    """
    for n in a.shape:
        if n < 3 * width:
            raise ValueError(
                f"each axis needs at least 3 * width = {3 * width} cells "
                f"(ghosts on both sides plus an interior of at least width), got shape {a.shape}"
            )
    if width == 0:
        return np.array(a, copy=True, order="C")
    interior = a[(slice(width, -width),) * a.ndim]
    indices = [(np.arange(n) - width) % (n - 2 * width) for n in a.shape]
    return np.ascontiguousarray(interior[np.ix_(*indices)])


def halo_exchange_1d(a: np.ndarray, width: int) -> np.ndarray:
    """``a`` after the periodic exchange ``a[:w] = a[-2w:-w]; a[-w:] = a[w:2w]``.

    ``len(a) >= 3 * width``: the ghosts on both sides plus an interior that holds
    both sources.  ``width = 0`` changes nothing.

    >>> halo_exchange_1d(np.array([-1, 1, 2, 3, 4, -1]), 1)
    array([4, 1, 2, 3, 4, 1])
    """
    if a.ndim != 1:
        raise ValueError(f"halo_exchange_1d takes a 1-D array, got shape {a.shape}")
    if width < 0:
        raise ValueError(f"width must be >= 0, got {width}")
    return _periodic_fill(a, width)


def halo_exchange_2d(a: np.ndarray, width: int) -> np.ndarray:
    """``a`` after the periodic exchange on both axes of a 2-D array, corners included.

    Each axis needs at least ``3 * width`` cells.  The corner ghosts receive
    the diagonally opposite interior corner, as with a rank's diagonal
    neighbour on a periodic process grid.

    >>> halo_exchange_2d(np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 4, 0], [0, 0, 0, 0]]), 1)
    array([[4, 3, 4, 3],
           [2, 1, 2, 1],
           [4, 3, 4, 3],
           [2, 1, 2, 1]])
    """
    if a.ndim != 2:
        raise ValueError(f"halo_exchange_2d takes a 2-D array, got shape {a.shape}")
    if width < 0:
        raise ValueError(f"width must be >= 0, got {width}")
    return _periodic_fill(a, width)
