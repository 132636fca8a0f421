"""JAX on the CPU and on a CUDA device.

JAX arrays are immutable: implementations return their result instead of
writing an ``out`` argument.  Items on these backends run with ``jax_enable_x64``
(:meth:`_JaxBackend.item_scope`), so that float64 and int64 checks test 64-bit
arithmetic rather than a silent downcast; the setting is put back after each
test phase, so a project's own JAX tests in the same run keep JAX's defaults.
Benchmarks time JAX on the host up to ``block_until_ready`` (:class:`ReadyTimer`:
JAX exposes no events and dispatches asynchronously), and the MPI checks update
its arrays with ``.at[]`` (:class:`JaxOps`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_gpucheck.backends._cuda_build import device_line, unready
from pytest_gpucheck.backends.array_ops import ArrayOps, Index
from pytest_gpucheck.backends.base import Backend, Probe, first_installed_version
from pytest_gpucheck.backends.timing import RoundTimer
from pytest_gpucheck.environment import apply_jax_memory_policy

if TYPE_CHECKING:
    from pytest_gpucheck.backends.adapter_base import Adapter


class _JaxBackend(Backend):
    distribution = "jax"
    mutable_arrays = False
    traces_under_jit = True
    platform: str = "cpu"

    def _jax(self) -> Any:
        # Before JAX's first operation creates its clients, on every platform at once.
        apply_jax_memory_policy()
        import jax

        return jax

    @contextlib.contextmanager
    def item_scope(self) -> Iterator[None]:
        """64-bit mode while a phase of an item on this backend runs, as it was after."""
        jax = self._jax()
        before = bool(jax.config.read("jax_enable_x64"))
        jax.config.update("jax_enable_x64", True)
        try:
            yield
        finally:
            jax.config.update("jax_enable_x64", before)

    def _device(self) -> Any:
        devices = self._jax().devices(self.platform)
        return devices[self.device_index if self.platform == "gpu" else 0]

    def xp_device(self) -> Any:
        # jax.numpy creates arrays on jax_default_device, one setting for the process
        # (the jax-gpu probe sets it): jax-cpu and jax-gpu each name their own device.
        return self._device()

    @property
    def module(self) -> Any:
        self._jax()
        import jax.numpy as jnp

        return jnp

    def to_device(self, host: np.ndarray) -> Any:
        return self._jax().device_put(np.asarray(host), self._device())

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.to_device(np.zeros(shape, dtype=dtype))

    def synchronize(self) -> None:
        # JAX has no device-wide barrier; benchmarks call block_until_ready on
        # results.  effects_barrier waits for pending side-effecting work.
        self._jax().effects_barrier()

    def event_timer(self, clock: str) -> RoundTimer:
        return ReadyTimer(self, clock)

    def copy(self, src: Any, dst: Any) -> Any:
        import jax.numpy as jnp

        return jnp.array(src, copy=True)  # immutable: dst is not written

    def wait_for(self, result: Any) -> None:
        result.block_until_ready()

    def devices(self) -> list[Any]:
        import jax

        return list(jax.devices(self.platform))

    def interop_adapter(self) -> Adapter:
        from pytest_gpucheck.backends.jax.adapter import JaxAdapter

        return JaxAdapter(self)

    def mpi_ops(self) -> ArrayOps:
        return JaxOps(self)


class JaxCpuBackend(_JaxBackend):
    """``jax.numpy`` under ``jit`` on the CPU device."""

    name = "jax-cpu"
    tier = "cpu"
    install_hint = "pip install 'pytest-gpucheck[cpu]'"
    platform = "cpu"

    def _probe(self) -> Probe:
        apply_jax_memory_policy()
        jax = self._import("jax")
        # No jax.devices() here: it starts JAX's backends, which read XLA_FLAGS once, and
        # the host-device count is decided when collection shows whether an item needs
        # several (pytest_gpucheck.multi_device).
        return Probe(True, version=jax.__version__, device="cpu")

    def fewer_devices_reason(self) -> str:
        import os

        from pytest_gpucheck.environment import HOST_DEVICES_OPTION, XLA_FLAG

        flags = os.environ.get("XLA_FLAGS", "")
        return (f"JAX started with XLA_FLAGS={flags!r}; it reads "
                f"{XLA_FLAG}=N only at start-up (the plugin sets it with "
                f"{HOST_DEVICES_OPTION}=N when collection finds an item that needs several "
                "jax-cpu devices and JAX has not started yet, e.g. by a conftest.py that "
                "creates an array)")


class JaxGpuBackend(_JaxBackend):
    """``jax.numpy`` under ``jit`` on a CUDA device."""

    name = "jax-gpu"
    tier = "gpu"
    install_hint = "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])"
    platform = "gpu"

    def _probe(self) -> Probe:
        problem = unready("jax", f"jax is not installed; install it with: {self.install_hint}")
        if problem:
            return Probe.missing(problem)
        apply_jax_memory_policy()
        jax = self._import("jax")
        try:
            devices = jax.devices("gpu")
        except RuntimeError as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            return Probe.missing(f"jax has no CUDA backend ({first}); install {self.install_hint}")
        if self.device_index >= len(devices):
            return Probe.missing(
                f"jax sees {len(devices)} GPU(s), device {self.device_index} is not among them"
            )
        # Code that does not place arrays itself (jnp.zeros, jax.random) then
        # follows --gpu-device too.
        jax.config.update("jax_default_device", devices[self.device_index])
        return Probe(True, version=jax.__version__, device=device_line(self.device_index))

    def runtime_version(self) -> str:
        return first_installed_version("jax-cuda13-plugin", "jax-cuda12-plugin")


class ReadyTimer(RoundTimer):
    """JAX: host time until every result of the round is ready.

    JAX exposes neither events nor its stream, so the round is timed on the host:
    the first call's dispatch and the wait for ``block_until_ready`` to return are
    in it.  On a GPU, as for the CUDA event timers, the round lasts at least 100
    dispatches of one call (``min_round_seconds``), so that first dispatch is at
    most 1% of it, and the dispatch per call is kept as the launch overhead.
    """

    bound = "block_until_ready"

    def time_round(self, run: Callable[[], Any], iterations: int) -> tuple[float, Any]:
        import jax

        results: list[Any] = []
        start = self.clock()
        if self.backend.is_gpu:
            self._calls(run, iterations, results)
        else:
            for _ in range(iterations):
                results.append(run())
        # Dispatch is asynchronous: wait for every result (a pytree is fine).
        jax.block_until_ready(results)
        return self.clock() - start, results[-1] if results else None


class JaxOps(ArrayOps):
    """JAX arrays: immutable, so every update returns a new array."""

    receives_in_place = False

    def take(self, a: Any, index: Index) -> Any:
        return a[index]

    def put(self, a: Any, index: Index, values: Any) -> Any:
        return a.at[index].set(values)

    def heat_interior(self, u: Any, alpha: float) -> Any:
        centre = u[1:-1]
        a = u.dtype.type(alpha)
        return u.at[1:-1].set(centre + a * (u[:-2] - u.dtype.type(2) * centre + u[2:]))
