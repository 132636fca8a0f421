"""Bundled JAX implementations (backends ``jax-cpu`` and ``jax-gpu``, same code).

JAX arrays are immutable, so every function *returns* its result instead of
writing an ``out`` argument (``docs/kernels.md``, "Immutable arrays"): the
in-place kernels return the updated array, reductions return a ``(1,)``
array, and where ``out`` would have carried a size the function takes it by
name (``histogram(x, nbins)``, ``monte_carlo_pi(seed, n, dtype)``).

Every function runs under ``jax.jit``, built lazily on first call (importing
this module imports no JAX).  Compilations are bounded: one per input shape
and dtype, with the arguments that fix a slice or output shape (``width``,
``nbins``, ``n``) static; ``steps`` is a traced loop bound
(``lax.fori_loop``), so the number of heat steps never recompiles.

The thread-index kernels are not applicable: JAX exposes no thread index, and
a ``jnp.arange`` would only restate the expected answer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pytest_gpucheck.registry import implements

from ._applicability import INDEX_MAPS, not_applicable_on

BACKENDS = ("jax-cpu", "jax-gpu")
NAME = "jnp"

F = TypeVar("F", bound=Callable[..., Any])


def _jitted(kernel: str, *static_argnames: str) -> Callable[[F], F]:
    """Run the body under ``jax.jit`` (built on first call); register it for ``kernel``."""

    def wrap(body: F) -> F:
        @functools.cache
        def compiled() -> Any:
            import jax

            # The backends enable x64 before handing out arrays; do it here too so a
            # direct call with float64 inputs is never silently downcast.
            jax.config.update("jax_enable_x64", True)
            return jax.jit(body, static_argnames=static_argnames)

        @functools.wraps(body)
        def call(*args: Any, **kwargs: Any) -> Any:
            return compiled()(*args, **kwargs)

        # jit's wrapper keeps the count of distinct compilations; tests read it.
        call.compiled = compiled  # type: ignore[attr-defined]
        for backend in BACKENDS:
            implements(kernel, backend=backend, name=NAME, origin="bundled")(call)
        return call  # type: ignore[return-value]

    return wrap


def _jnp() -> Any:
    import jax.numpy as jnp

    return jnp


def _highest() -> Any:
    # Full float32 products on GPUs, whose default matmul precision may be TF32.
    import jax

    return jax.lax.Precision.HIGHEST


# -- elementwise ------------------------------------------------------------------------------
@_jitted("vector_add")
def vector_add(a: Any, b: Any) -> Any:
    """``a + b``."""
    return a + b


@_jitted("saxpy")
def saxpy(alpha: Any, x: Any, y: Any) -> Any:
    """``alpha * x + y`` with ``alpha`` cast to ``x``'s dtype (XLA may fuse it into an FMA)."""
    # Under jit alpha is a traced scalar (a Python float arrives weakly typed).
    return alpha.astype(x.dtype) * x + y


@_jitted("sigmoid")
def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``."""
    jnp = _jnp()
    one = jnp.ones((), dtype=x.dtype)
    return one / (one + jnp.exp(-x))


@_jitted("add_one_2d")
def add_one_2d(a: Any) -> Any:
    """The updated array ``a + 1`` (JAX cannot update in place)."""
    return a + _jnp().ones((), dtype=a.dtype)


@_jitted("transpose")
def transpose(a: Any) -> Any:
    """``a.T``, materialized by XLA."""
    return a.T


# -- reductions ---------------------------------------------------------------------------------
@_jitted("sum")
def sum_(x: Any) -> Any:
    """``[sum(x)]`` accumulated in ``x``'s dtype."""
    return _jnp().sum(x, dtype=x.dtype).reshape(1)


@_jitted("dot")
def dot(x: Any, y: Any) -> Any:
    """``[sum(x * y)]``."""
    jnp = _jnp()
    return jnp.dot(x, y, precision=_highest()).astype(jnp.result_type(x, y)).reshape(1)


@_jitted("max")
def max_(x: Any) -> Any:
    """``[max(x)]`` of a non-empty ``x`` (NaN propagates)."""
    return _jnp().max(x).reshape(1)


@_jitted("weighted_sum")
def weighted_sum(x: Any, w: Any) -> Any:
    """``[sum(w * x)]``."""
    jnp = _jnp()
    return jnp.sum(w * x, dtype=jnp.result_type(x, w)).reshape(1)


@_jitted("sum_of_squares")
def sum_of_squares(x: Any) -> Any:
    """``[sum(x * x)]``."""
    return _jnp().sum(x * x, dtype=x.dtype).reshape(1)


@_jitted("histogram", "nbins")
def histogram(x: Any, nbins: int) -> Any:
    """Counts of each value in ``[0, nbins)``, in ``x``'s dtype (a scatter-add).  Values outside
    are not counted: they are sent past the end and dropped (``mode="drop"``; a negative
    index would otherwise count from the end, as in NumPy)."""
    jnp = _jnp()
    index = jnp.where((x >= 0) & (x < nbins), x, nbins)
    return jnp.zeros(nbins, dtype=x.dtype).at[index].add(jnp.ones((), dtype=x.dtype),
                                                         mode="drop")


@functools.cache
def _uniform_pairs_jit() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)  # as in _jitted: float64 samples stay float64
    return jax.jit(_uniform_pairs, static_argnames=("n", "dtype"))


def _uniform_pairs(seed: Any, n: int, dtype: str) -> Any:
    import jax

    # Two keys split from the seed's key: one stream per coordinate; within a
    # stream, threefry is counter-based, so every sample gets its own counter.
    key_u, key_v = jax.random.split(jax.random.key(seed))
    u = jax.random.uniform(key_u, (n,), dtype=dtype)
    v = jax.random.uniform(key_v, (n,), dtype=dtype)
    return _jnp().stack([u, v], axis=1)


def _monte_carlo_pi(seed: int, n: int, dtype: Any, platform: str | None) -> Any:
    import contextlib

    import jax
    import numpy as np

    # No array argument tells jit where to run: place the computation explicitly
    # on the CPU for jax-cpu.  jax-gpu must not enter default_device(None): that
    # would override the jax_default_device its probe set from --gpu-device or the
    # MPI local rank, and run on GPU 0 whatever this process was given.
    where = jax.default_device(jax.devices(platform)[0]) if platform else contextlib.nullcontext()
    with where:
        # jax.random.key takes a 64-bit signed seed; fold larger ones into range.
        return _uniform_pairs_jit()(int(seed) % 2**63, n=int(n), dtype=np.dtype(dtype).name)


@implements("monte_carlo_pi", backend="jax-cpu", name=NAME, origin="bundled")
def monte_carlo_pi(seed: int, n: int, dtype: Any = "float64") -> Any:
    """``(n, 2)`` samples uniform in ``[0, 1)^2`` from ``jax.random`` keys split from ``seed``.

    ``dtype`` (float32 or float64) selects the samples' precision.
    """
    return _monte_carlo_pi(seed, n, dtype, "cpu")


@implements("monte_carlo_pi", backend="jax-gpu", name=NAME, origin="bundled")
def monte_carlo_pi_gpu(seed: int, n: int, dtype: Any = "float64") -> Any:
    """:func:`monte_carlo_pi` on the device the jax-gpu probe made JAX's default."""
    return _monte_carlo_pi(seed, n, dtype, None)


# -- stencils and halos -------------------------------------------------------------------------
def _heat_step(u: Any, alpha: Any) -> Any:
    jnp = _jnp()
    out = jnp.zeros_like(u)
    if u.shape[0] <= 2:
        return out
    centre = u[1:-1]
    two = jnp.asarray(2, dtype=u.dtype)
    return out.at[1:-1].set(centre + alpha * (u[:-2] - two * centre + u[2:]))


@_jitted("heat_step_1d")
def heat_step_1d(u: Any, alpha: Any) -> Any:
    """One explicit heat step, walls held at 0."""
    return _heat_step(u, _jnp().asarray(alpha, dtype=u.dtype))


@_jitted("heat_steps_1d")
def heat_steps_1d(u: Any, alpha: Any, steps: Any) -> Any:
    """``steps`` heat steps in a ``lax.fori_loop`` (``steps`` is traced: no recompilation)."""
    import jax

    alpha = _jnp().asarray(alpha, dtype=u.dtype)
    return jax.lax.fori_loop(0, steps, lambda _, state: _heat_step(state, alpha), u)


@_jitted("laplacian_2d")
def laplacian_2d(u: Any) -> Any:
    """Five-point Laplacian on the interior, 0 on the boundary."""
    jnp = _jnp()
    out = jnp.zeros_like(u)
    if u.shape[0] <= 2 or u.shape[1] <= 2:
        return out
    four = jnp.asarray(4, dtype=u.dtype)
    interior = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                - four * u[1:-1, 1:-1])
    return out.at[1:-1, 1:-1].set(interior)


def _halo_axis(a: Any, width: int, axis: int) -> Any:
    # Explicit bounds: a[-0:] would be the whole axis.
    n = a.shape[axis]
    lead = (slice(None),) * axis
    # Index tuples are built first: a starred subscript needs Python >= 3.11.
    low_ghost, low_source = (*lead, slice(0, width)), (*lead, slice(n - 2 * width, n - width))
    high_ghost, high_source = (*lead, slice(n - width, n)), (*lead, slice(width, 2 * width))
    a = a.at[low_ghost].set(a[low_source])
    return a.at[high_ghost].set(a[high_source])


@_jitted("halo_exchange_1d", "width")
def halo_exchange_1d(a: Any, width: int) -> Any:
    """The array after the periodic exchange of ``width`` ghost cells."""
    return _halo_axis(a, width, 0) if width else a


@_jitted("halo_exchange_2d", "width")
def halo_exchange_2d(a: Any, width: int) -> Any:
    """The array after the periodic exchange on both axes (axis 1 after axis 0: corners)."""
    return _halo_axis(_halo_axis(a, width, 0), width, 1) if width else a


# -- linalg -------------------------------------------------------------------------------------
@_jitted("matmul")
def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` at ``Precision.HIGHEST`` (no TF32)."""
    return _jnp().matmul(a, b, precision=_highest())


_NO_THREAD_INDEX = ("JAX exposes no thread index: jnp code cannot choose which thread "
                    "writes which element, so there is no launch to check")
not_applicable_on(INDEX_MAPS, BACKENDS, _NO_THREAD_INDEX)
not_applicable_on(["matmul_tiled"], BACKENDS,
                  "jnp code has no shared memory to tile through; XLA tiles matmul itself "
                  "(checked as matmul)")
