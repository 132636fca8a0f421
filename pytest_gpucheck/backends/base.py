"""The one small interface every framework backend implements.

A backend is a framework on a target (``torch-cuda`` is PyTorch on a CUDA
device).  Everything here is cheap and side-effect free until a method that
needs the framework is called: constructing a backend imports nothing, and
:meth:`Backend.probe` imports the framework but never raises.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    from numpy.typing import DTypeLike

    from pytest_gpucheck.backends.adapter_base import Adapter
    from pytest_gpucheck.backends.array_ops import ArrayOps
    from pytest_gpucheck.backends.timing import RoundTimer

Tier = Literal["cpu", "gpu"]


class PeerCopy(Protocol):
    """A framework's documented copy of an array from one of its GPUs to another
    (:meth:`Backend.peer_copy`), as the multi-device suite's ``test_peer_copy`` calls it."""

    name: str

    def device_count(self) -> int: ...
    def can_access_peer(self, device: int, peer: int) -> bool: ...
    def put(self, host: np.ndarray, device: int) -> Any: ...
    def copy_to(self, array: Any, device: int) -> Any: ...
    def device_of(self, array: Any) -> int: ...
    def overwrite(self, array: Any) -> None: ...
    def to_host(self, array: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class Probe:
    """What probing a backend found: usable, or the one-line reason it is not."""

    available: bool
    reason: str = ""
    version: str = ""
    device: str = ""

    @classmethod
    def missing(cls, reason: str) -> Probe:
        return cls(available=False, reason=reason)


class BackendUnavailable(RuntimeError):
    """Raised by a backend method used while the backend is unavailable."""


class Backend:
    """A framework on a target, behind the operations tests and suites need.

    Subclasses set the class attributes and implement ``_probe`` plus the array
    operations.  ``device_index`` is the CUDA device this process uses (chosen
    by :mod:`pytest_gpucheck.backends.devices` before any framework is imported); CPU
    backends ignore it.

    This class is the one protocol the features call: the benchmarks
    (:meth:`event_timer`, :meth:`copy`, :meth:`wait_for`,
    :meth:`runtime_version`), the interop suite (:meth:`interop_adapter`) and
    the MPI checks (:meth:`mpi_ops`) never branch on a backend's name.  Each
    framework overrides what differs in its own folder,
    ``backends/<framework>/``; the defaults below fit a host backend with a
    NumPy-like namespace.
    """

    name: ClassVar[str]
    tier: ClassVar[Tier]
    #: Distribution that provides the framework, for version reports.
    distribution: ClassVar[str]
    #: The command that installs what this backend needs.
    install_hint: ClassVar[str]
    #: True where device arrays can be written in place through an ``out`` argument.
    mutable_arrays: ClassVar[bool] = True
    #: True where the "device" is a simulator running on the host (numba-cudasim):
    #: one Python thread per CUDA thread, so suites use small problems, and the
    #: benchmark environment names the simulator as the device.
    is_simulator: ClassVar[bool] = False
    #: True where implementations are traced and compiled under ``jit`` (JAX), so
    #: a count of compilations is meaningful and a changed shape retraces.
    traces_under_jit: ClassVar[bool] = False
    #: True where kernels run as machine code on this host without bounds checks (an
    #: out-of-bounds index writes memory and can kill the process: numba-cpu): under the
    #: default ``--gpu-isolate=auto`` on a machine without a GPU, its items run in the
    #: host's isolation worker, so a crash costs one test, not the run.
    unchecked_host_code: ClassVar[bool] = False
    #: True where the work runs on the calling thread, so the process's CPU time
    #: measures it honestly (NumPy, the simulator); pools that spin-wait are not.
    single_threaded: ClassVar[bool] = False
    #: True where the work runs on one thread once the framework's pools are limited to
    #: one (``OMP_NUM_THREADS=1`` and the like, as the gate's measured processes run on
    #: two CPUs: numba-cpu's ``prange``, torch-cpu's intra-op pool): a pool of one thread
    #: has no idle workers to spin, so the process's CPU time is honest there too.
    single_threaded_in_one_thread_pools: ClassVar[bool] = False

    def __init__(self, device_index: int = 0) -> None:
        self.device_index = device_index
        self._probe_result: Probe | None = None
        self._namespace: Any = None

    def thread_counts(self) -> tuple[int, ...]:
        """The thread counts the conformance suites' repeat check runs a case under, the
        largest first, where the backend's kernels run on a pool of CPU threads whose size
        can be set (Numba's ``parallel=True``); empty where it has no such pool."""
        return ()

    def using_threads(self, count: int) -> AbstractContextManager[None]:
        """Run the enclosed kernels on ``count`` threads (one of :meth:`thread_counts`)."""
        return nullcontext()

    def threads_overlap(self) -> bool | None:
        """Whether the pool's threads ran at the same time just now: a probe kernel of the
        pool's own that races on purpose, a few calls in a row.  None without a pool."""
        return None

    def race_scan(self) -> Any:
        """A context manager that watches what the backend compiles while it is active;
        afterwards its ``findings()`` returns ``(findings, note)``: the data races found by
        reading the compiled parallel loops (each with ``kind``, ``"race"`` or ``"may
        race"``, and ``message()``), and a note saying what was inspected.  None where the
        backend compiles no parallel loops of its own (only ``numba-cpu`` does)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} device={self.device_index}>"

    @property
    def is_gpu(self) -> bool:
        return self.tier == "gpu"

    # -- probing -----------------------------------------------------------------
    def probe(self) -> Probe:
        """Find out (once) whether this backend can run here; never raises."""
        if self._probe_result is None:
            try:
                self._probe_result = self._probe()
            except _MissingModule as exc:
                self._probe_result = Probe.missing(str(exc))
            except Exception as exc:  # a broken install must read as a reason, not crash pytest
                first_line = (str(exc).strip().splitlines() or [""])[0]
                self._probe_result = Probe.missing(
                    f"{self.name} failed to initialise: {type(exc).__name__}: {first_line}"
                )
        return self._probe_result

    def _probe(self) -> Probe:
        raise NotImplementedError

    def require(self) -> None:
        """Raise :class:`BackendUnavailable` with the probe's reason unless usable."""
        probe = self.probe()
        if not probe.available:
            raise BackendUnavailable(f"{self.name}: {probe.reason}")

    def version(self) -> str:
        """Version of the framework's distribution, read without importing it."""
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return ""

    def _import(self, module: str) -> Any:
        """Import ``module`` or explain, with the install command, why it cannot be."""
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            raise _MissingModule(
                f"{module} is not installed ({exc.name or module}); "
                f"install it with: {self.install_hint}"
            ) from exc

    def item_scope(self) -> contextlib.AbstractContextManager[None]:
        """What holds while a test phase of an item on this backend runs, and only then.

        Framework settings the checks need but a project's own tests must not see
        (JAX's 64-bit mode) are set here and put back after the phase; the core
        enters it around setup, call and teardown of each item on this backend.
        Nothing by default.
        """
        return contextlib.nullcontext()

    # -- arrays ------------------------------------------------------------------
    @property
    def module(self) -> Any:
        """The framework's own array module (``numpy``, ``cupy``, ``jax.numpy``, ``torch``),
        or None where its device arrays have none (Numba's CUDA targets, cuda-python).

        The whole of the framework, extensions included (``torch.contiguous_format``,
        ``numpy.ascontiguousarray``); :attr:`xp` is the standard's names on the same arrays.
        """
        return None

    @property
    def xp(self) -> Any:
        """The Python array API namespace of this backend's arrays, or None without one.

        What ``array_api_compat.array_namespace`` returns for an array of this
        backend, the convention of array-api-tests, SciPy and scikit-learn: the
        compat layer's wrapper of NumPy, CuPy and PyTorch (``xp.permute_dims``,
        ``xp.astype``, ``xp.isdtype`` on every one), ``jax.numpy`` itself, and
        ``array_api_strict``.  Imports ``array_api_compat`` on first use (not at
        load).  Without it, a module that is its own namespace (NumPy >= 2, JAX)
        is returned; any other raises :class:`BackendUnavailable` with the fix.
        """
        if self.module is None:
            return None
        if self._namespace is None:
            namespace = self._array_namespace()
            device = self.xp_device()
            if device is not None:
                from pytest_gpucheck.backends.device_namespace import DeviceNamespace

                namespace = DeviceNamespace(namespace, device, self.xp_device_context())
            self._namespace = namespace
        return self._namespace

    def xp_device(self) -> Any:
        """The device :attr:`xp`'s creation functions must place arrays on, in the
        framework's terms, where the namespace's default device need not be this
        backend's (array-api-compat's torch wrapper defaults to torch's default device,
        the CPU, on ``torch-cuda`` too); None where the default is right.  :attr:`xp` is
        then a :class:`~.device_namespace.DeviceNamespace` that passes it."""
        return None

    def xp_device_context(self) -> Callable[[], AbstractContextManager[Any]] | None:
        """Where the namespace places arrays by a context, not by ``device=``: a callable
        returning the context manager in which :attr:`xp`'s creation functions run
        (CuPy's ``cupy.cuda.Device``); None to pass :meth:`xp_device` as ``device=``."""
        return None

    def _array_namespace(self) -> Any:
        try:
            import array_api_compat
        except ImportError:
            if hasattr(self.module, "__array_api_version__"):
                return self.module  # NumPy >= 2 and JAX are namespaces of their own
            raise BackendUnavailable(
                f"{self.name}: its array API namespace needs array-api-compat "
                f"({self.module.__name__} itself lacks the standard's names); install it "
                "with: pip install array-api-compat (gpu_backend.module is the bare "
                f"{self.module.__name__})") from None
        return array_api_compat.array_namespace(self.empty((0,), "float32"))

    def to_device(self, host: np.ndarray) -> Any:
        """Copy a NumPy array to this backend's device, keeping shape and dtype."""
        raise NotImplementedError

    def to_host(self, array: Any) -> np.ndarray:
        """Copy a device array back into a new NumPy array (synchronizing first)."""
        raise NotImplementedError

    def empty(self, shape: tuple[int, ...], dtype: DTypeLike) -> Any:
        """Allocate an uninitialised device array."""
        raise NotImplementedError

    def full(self, shape: tuple[int, ...], value: Any, dtype: DTypeLike) -> Any:
        """Allocate a device array filled with ``value``."""
        import numpy as np

        return self.to_device(np.full(shape, value, dtype=dtype))

    def synchronize(self) -> None:
        """Wait until all work queued on this backend's device has finished."""

    def health_check(self) -> None:
        """Raise if this process can no longer use the device.

        A CUDA sticky error (an illegal address) poisons the context: every
        later synchronize or allocation fails.  Isolation workers call this
        after a failed test and are replaced when it raises.  A synchronize
        plus a tiny allocation and copy back; override where a backend has a
        stronger probe.
        """
        self.synchronize()
        self.to_host(self.full((1,), 1, "float32"))

    def describe_device(self) -> str:
        """One line naming the device (``cpu``, ``NVIDIA H100 80GB HBM3 (cc 9.0) #0``)."""
        return self.probe().device

    # -- several devices -----------------------------------------------------------
    def devices(self) -> list[Any]:
        """Every device of this backend the process can use, as the framework names them
        (``jax.Device``, ``torch.device``...); host backends have one, ``"host"``.

        Imports the framework.
        """
        return ["host"]

    def fewer_devices_reason(self) -> str:
        """Why this backend may have fewer devices than a test needs, and how to get more."""
        if self.is_gpu:
            return "this machine has fewer GPUs visible (CUDA_VISIBLE_DEVICES)"
        return f"{self.name} runs on one host device"

    # -- benchmarks ---------------------------------------------------------------
    def event_timer(self, clock: str) -> RoundTimer:
        """The timer that bounds one benchmark round of this backend's device work.

        ``clock`` (``wall`` or ``process``) is the host clock chosen for CPU
        backends.  The default times on the host and calls :meth:`synchronize`
        at both ends; CUDA backends return a CUDA event timer on their stream,
        JAX a timer that waits on ``block_until_ready``.
        """
        from pytest_gpucheck.backends.timing import RoundTimer

        return RoundTimer(self, clock)

    def copy(self, src: Any, dst: Any) -> Any:
        """Copy device array ``src`` into ``dst`` with the framework's own copy; return the copy.

        The streaming benchmark, the bandwidth ceiling and the L2 flush use it, so
        the figure is what a user of the framework gets.  Immutable arrays (JAX)
        ignore ``dst`` and return a new array.  The default is NumPy's copy.
        """
        import numpy as np

        np.copyto(dst, src)
        return dst

    def wait_for(self, result: Any) -> None:
        """Wait until ``result`` is computed, where :meth:`synchronize` does not (JAX)."""

    def runtime_version(self) -> str:
        """The CUDA runtime the framework was built with, where it says so ("" otherwise).

        May raise: a caller that only reports it catches the failure.
        """
        return ""

    # -- interop and MPI ------------------------------------------------------------
    def interop_adapter(self) -> Adapter:
        """This framework as the interop suite sees it (DLPack / CUDA Array Interface).

        Backends without an array type of their own (``numba-cpu``) have none:
        :data:`pytest_gpucheck.backends.NO_INTEROP_ADAPTER` says why.
        """
        raise LookupError(f"{self.name} has no interop adapter")

    def mpi_ops(self) -> ArrayOps:
        """The device-array operations distributed checks run on this backend."""
        from pytest_gpucheck.backends.array_ops import ArrayOps

        return ArrayOps(self)

    def peer_copy(self) -> PeerCopy | None:
        """How this framework copies an array from one of its GPUs to another, the way it
        documents it (what the multi-device suite's ``test_peer_copy`` checks); ``None``
        where the framework has no such copy to check."""
        return None


def first_installed_version(*distributions: str) -> str:
    """``name version`` of the first of ``distributions`` installed ("" when none is)."""
    for name in distributions:
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


class _MissingModule(Exception):
    """A probe-time import failure whose message already says how to fix it."""
