"""GPU code paths checked without a GPU: hand-built producers, recorded driver calls.

Where the behaviour is the point (which CUDA Array Interface version a
producer declares, an array without ``__dlpack__``, the stream a copy is
queued on, which device JAX runs on), fakes stand in for the GPU and the
real checker, classifier, backend or probe runs on them.  Each test here
fails when the fix it covers is reverted.
"""

from __future__ import annotations

import ctypes
import sys
import textwrap
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from fake_cai import FakeCaiArray, FakeCaiProducer, cai_facts
from user_runs import REPO, assert_outcomes, run_command, run_pytest

from pytest_gpucheck.backends.array_facts import ArrayFacts
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

# -- hand-built CUDA Array Interface producers (tests/fake_cai.py) ----------------------------
STRIDED = np.arange(24.0).reshape(4, 6)[1:, ::2]

# (what the producer is, the array, the problem the checker must report or None)
CAI_PRODUCERS = [
    ("v2 without stream (torch, JAX)", FakeCaiArray(np.arange(6.0), version=2), None),
    ("v2 read-only (JAX)", FakeCaiArray(np.arange(6.0), version=2, readonly=True), None),
    ("v2 strided", FakeCaiArray(STRIDED, version=2), None),
    ("v2 Fortran order", FakeCaiArray(np.asfortranarray(np.ones((3, 4))), version=2), None),
    ("v3 without stream", FakeCaiArray(np.arange(6.0)), None),
    ("v3 stream None", FakeCaiArray(np.arange(6.0), stream=None), None),
    ("v3 with a stream", FakeCaiArray(np.arange(6.0), stream=0x5000), None),
    ("v3 read-only strided", FakeCaiArray(STRIDED, readonly=True, stream=2), None),
    ("v3 stream 0", FakeCaiArray(np.arange(6.0), stream=0), "stream is 0"),
    ("v2 with a stream", FakeCaiArray(np.arange(6.0), version=2, stream=7),
     "stream 7 given under version 2"),
    ("v1", FakeCaiArray(np.arange(6.0), version=1), "version is 1"),
]


@pytest.mark.parametrize(("array", "problem"), [p[1:] for p in CAI_PRODUCERS],
                         ids=[p[0] for p in CAI_PRODUCERS])
def test_cai_export_judges_each_version_by_its_rules(array: FakeCaiArray,
                                                     problem: str | None) -> None:
    from pytest_gpucheck.interop.cai_export import cai_problems

    problems = cai_problems(array.__cuda_array_interface__, cai_facts(array))
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


# -- DLPack-less device arrays ----------------------------------------------------------------
@dataclass
class FakeBuffer:
    """A cuda.core Buffer stand-in whose "device memory" is a host array."""

    host: np.ndarray
    device_id: int = 0

    @property
    def handle(self) -> int:
        return int(self.host.ctypes.data)


def test_a_device_array_without_dlpack_is_reported_not_available() -> None:
    from pytest_gpucheck.backends.cuda_python.backend import DeviceArray
    from pytest_gpucheck.interop.export import missing_dlpack

    producer = SimpleNamespace(name="cuda-python")
    array = DeviceArray(FakeBuffer(np.zeros(4)), (4,), np.dtype("float64"))
    assert missing_dlpack(producer, array) == (  # type: ignore[arg-type]
        "cuda-python arrays (DeviceArray) have no __dlpack__")
    assert missing_dlpack(producer, FakeCaiArray(np.arange(3.0))) is not None  # type: ignore[arg-type]
    assert missing_dlpack(producer, np.arange(3.0)) is None  # type: ignore[arg-type]


def test_a_half_dlpack_producer_is_still_a_failure() -> None:
    from pytest_gpucheck.interop.export import check_dlpack_export, missing_dlpack

    class HalfDlpack:
        def __dlpack__(self, **_: Any) -> Any:
            return np.arange(3.0).__dlpack__()

    adapter = SimpleNamespace(name="half", produce=lambda case: HalfDlpack())
    assert missing_dlpack(adapter, HalfDlpack()) is None  # type: ignore[arg-type]
    report = check_dlpack_export(adapter, Case("float64", (3,)))  # type: ignore[arg-type]
    assert report.problems == ["half arrays have no __dlpack_device__ (DLPack needs both)"]


# -- the classifier and the documented table on fake GPU producers ----------------------------
class FakeCaiAdapter(FakeCaiProducer):
    """A GPU producer whose arrays are host memory exported through CAI ``version``."""

    readonly = "flag"

    def __init__(self, name: str, version: int) -> None:
        super().__init__(name)
        self.version = version

    def upload(self, host: np.ndarray) -> Any:
        return FakeCaiArray(host.copy(order="A"), version=self.version)

    def view(self, array: Any, slices: tuple[slice, ...]) -> Any:
        return FakeCaiArray(array.host[slices], version=self.version)

    def make_readonly(self, array: Any) -> Any:
        return FakeCaiArray(array.host, version=self.version, readonly=True)


def _cuda_core_consumer() -> Any:
    pytest.importorskip("cuda.core")
    from pytest_gpucheck.backends.cuda_python.adapter import CudaCoreAdapter

    # The consumer's stream is only passed along; a v2 producer is refused before.
    return CudaCoreAdapter(SimpleNamespace(stream=SimpleNamespace(handle=0), device_index=0,
                                           synchronize=lambda: None))


@pytest.mark.parametrize(("producer", "documented"), [("jax-gpu", True), ("torch-cuda", False)])
def test_cuda_core_refusing_cai_v2_is_documented(producer: str, documented: bool) -> None:
    """cuda.core's real importer refuses a v2 producer (no driver needed to see it).

    Documented for JAX only: cuda.core >= 1.2 reads a real torch.Tensor through
    its AOTI bridge (zero-copy on the H100), so a v2 refusal there is news.
    """
    from pytest_gpucheck.interop.classify import exchange
    from pytest_gpucheck.interop.converters import library_converter
    from pytest_gpucheck.interop.documented import judge

    converter = library_converter("cai", producer, "cuda-python")
    for case in (Case("float64", (3,)), Case("float32", (2, 3), readonly=True)):
        result = exchange(case, FakeCaiAdapter(producer, 2), _cuda_core_consumer(), converter)
        assert result.outcome is Outcome.REFUSES, result.describe()
        verdict = judge(case, result, converter)
        if not documented:
            assert verdict.kind == "fail", verdict
            continue
        assert verdict.kind == "ok", verdict.message
        assert verdict.documented is not None
        assert verdict.documented.key == "cuda-core-refuses-cai-v2"


def test_an_unexplained_refusal_of_cai_v3_still_fails() -> None:
    from pytest_gpucheck.interop.converters import library_converter
    from pytest_gpucheck.interop.documented import judge

    converter = library_converter("cai", "torch-cuda", "cuda-python")
    refused = Exchange(Outcome.REFUSES, error=BufferError("some other reason"))
    assert judge(Case("float64", (3,)), refused, converter).kind == "fail"


READONLY_LOST = [
    ("jax-gpu", "cupy", "dlpack", "cupy-ignores-readonly"),
    ("cuda-python", "cupy", "cai", "cupy-ignores-readonly"),
    ("cuda-python", "numba-cuda", "cai", "numba-cuda-cai-ignores-readonly"),
    ("jax-gpu", "numba-cuda", "cai", "numba-cuda-cai-ignores-readonly"),
    # torch refuses a read-only CAI (torch-refuses-readonly-cai): losing it there is news
    ("cuda-python", "torch-cuda", "cai", None),
    ("jax-gpu", "torch-cuda", "dlpack", "torch-ignores-readonly"),
    ("jax-gpu", "cuda-python", "dlpack", "cuda-core-legacy-capsule-writable"),
    ("jax-gpu", "cuda-python", "dlpack-nocopy", "cuda-core-legacy-capsule-writable"),
    ("cuda-python", "jax-gpu", "dlpack", None),  # JAX keeps read-only: a real failure
    ("torch-cuda", "cuda-python", "dlpack", None),  # not JAX's legacy capsule
]


@pytest.mark.parametrize(("producer", "consumer", "protocol", "key"), READONLY_LOST)
def test_read_only_lost_on_the_gpu_is_a_known_defect_only_where_documented(
        producer: str, consumer: str, protocol: str, key: str | None) -> None:
    from pytest_gpucheck.interop.converters import library_converter
    from pytest_gpucheck.interop.documented import judge

    before = ArrayFacts(0x1000, (3,), (8,), np.dtype("float64"), "cuda:0", readonly=True)
    after = ArrayFacts(0x1000, (3,), (8,), np.dtype("float64"), "cuda:0", readonly=False)
    result = Exchange(Outcome.WRONG, before, after, ["read-only lost: the consumer can write "
                                                     "into the producer's read-only memory"])
    verdict = judge(Case("float64", (3,), readonly=True), result,
                    library_converter(protocol, producer, consumer))
    from pytest_gpucheck.interop.documented import DOCUMENTED

    # An entry of some releases only (JAX's legacy capsules end with 0.12) explains
    # nothing outside them: there the lost flag is a failure.
    if key is not None and not next(e for e in DOCUMENTED if e.key == key).applies():
        key = None
    if key is None:
        assert verdict.kind == "fail"
    else:
        assert (verdict.kind, verdict.documented and verdict.documented.key) == ("known", key)


# -- cuda-python: every copy on the stream the kernels run on ----------------------------------
@dataclass
class FakeStream:
    handle: int = 0x5_7EA4
    syncs: int = 0

    def sync(self) -> None:
        self.syncs += 1


@dataclass
class FakeDevice:
    """``allocate`` hands out host memory, so recorded copies can really move bytes."""

    buffers: list[FakeBuffer] = field(default_factory=list)

    def allocate(self, nbytes: int, stream: Any = None) -> FakeBuffer:
        buffer = FakeBuffer(np.zeros(nbytes, dtype=np.uint8))
        self.buffers.append(buffer)
        return buffer

    def create_stream(self) -> FakeStream:
        return FakeStream()


@pytest.fixture
def driver_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Replace the driver's copy functions with recorders that copy host memory."""
    driver = pytest.importorskip("cuda.bindings.driver")
    calls: list[tuple[str, Any]] = []

    def recorder(name: str, has_stream: bool) -> Any:
        def copy(dst: int, src: int, nbytes: int, *stream: Any) -> tuple[int]:
            calls.append((name, stream[0] if has_stream else "legacy default stream"))
            ctypes.memmove(int(dst), int(src), int(nbytes))
            return (0,)
        return copy

    for name in ("cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"):
        monkeypatch.setattr(driver, name, recorder(name, False), raising=False)
    for name in ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"):
        monkeypatch.setattr(driver, name, recorder(name, True))
    return calls


def _fake_cuda_python_backend() -> Any:
    from pytest_gpucheck.backends.cuda_python.backend import CudaPythonBackend

    backend = CudaPythonBackend(0)
    backend._device, backend._stream = FakeDevice(), FakeStream()
    return backend


def test_every_cuda_python_copy_is_queued_on_the_kernels_stream(
        driver_calls: list[tuple[str, Any]]) -> None:
    from pytest_gpucheck.backends.cuda_python.adapter import CudaCoreAdapter

    backend = _fake_cuda_python_backend()
    stream = backend.stream
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    array = backend.to_device(host)
    np.testing.assert_array_equal(backend.to_host(array), host)
    adapter = CudaCoreAdapter(backend)
    fortran = adapter.upload(np.asfortranarray(host))
    adapter.write(fortran, (2, 3), np.float32(-1))
    expected = host.copy()
    expected[2, 3] = -1
    np.testing.assert_array_equal(adapter.to_host(fortran), expected)
    assert driver_calls, "no copy was recorded"
    assert {where for _, where in driver_calls} == {stream.handle}, driver_calls
    # Each copy from pageable memory is waited for before the host array can go.
    assert stream.syncs >= len(driver_calls)


def test_cuda_python_arrays_export_the_stream_their_data_is_written_on(
        driver_calls: list[tuple[str, Any]]) -> None:
    from pytest_gpucheck.backends.cuda_python.adapter import CudaCoreAdapter
    from pytest_gpucheck.checking.device_views import slice_view, transpose_view
    from pytest_gpucheck.interop.cai_export import cai_problems

    backend = _fake_cuda_python_backend()
    array = backend.to_device(np.arange(12.0).reshape(3, 4))
    adapter = CudaCoreAdapter(backend)
    read_only = adapter.make_readonly(array)
    for each in (array, backend.empty((2,), np.int32), slice_view(array, (slice(1, 3),)),
                 transpose_view(array), read_only, slice_view(read_only, (slice(0, 2),))):
        interface = each.__cuda_array_interface__
        assert interface["version"] == 3
        assert interface["stream"] == backend.stream.handle, type(each)
        assert cai_problems(interface, adapter.facts(each)) == []
    assert slice_view(read_only, (slice(0, 2),)).__cuda_array_interface__["data"][1] is True


def test_the_legacy_default_stream_is_exported_as_1_not_0() -> None:
    from pytest_gpucheck.backends.cuda_python.backend import stream_handle

    assert stream_handle(None) is None
    assert stream_handle(SimpleNamespace(handle=0)) == 1
    assert stream_handle(SimpleNamespace(handle=0x1234)) == 0x1234


# -- JAX: no preallocation, and the probe's device kept -------------------------------------
def test_the_jax_memory_policy_keeps_what_the_user_chose() -> None:
    from pytest_gpucheck.environment import apply_jax_memory_policy

    env: dict[str, str] = {}
    assert apply_jax_memory_policy(env) == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    assert env == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    chosen = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    assert apply_jax_memory_policy(chosen) == {}
    assert chosen == {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    sized = {"XLA_PYTHON_CLIENT_MEM_FRACTION": ".2"}
    assert apply_jax_memory_policy(sized) == {}
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in sized


JAX_ENV_TEST = """
    import os


    def test_jax_does_not_preallocate_here(gpu_backend):
        assert os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE") == {expected!r}
"""


@pytest.mark.slow
def test_every_process_of_a_jax_run_has_the_memory_policy(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent and the simulator child (a process the plugin starts) both see it.

    (That a value the user set is kept is the unit test above: one subprocess run
    with the simulator child costs seconds.)
    """
    for key in ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                "XLA_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv(key, raising=False)
    pytester.makepyfile(textwrap.dedent(JAX_ENV_TEST.format(expected="false")))
    result = run_pytest(pytester.path, "--gpu-backends=numpy,numba-cudasim,jax-cpu",
                        timeout=600)
    assert_outcomes(result.stdout, passed=3)


JAX_DEVICE_SCRIPT = """
import jax
from pytest_gpucheck.conformance.implementations.jax_impls import monte_carlo_pi_gpu

# What the jax-gpu probe does for --gpu-device=1 / local rank 1, on two CPU devices.
jax.config.update("jax_default_device", jax.devices("cpu")[1])
samples = monte_carlo_pi_gpu(7, 16)
print(sorted(d.id for d in samples.devices()))
"""


@pytest.mark.slow
def test_jax_gpu_monte_carlo_runs_on_the_device_the_probe_chose() -> None:
    pytest.importorskip("jax")
    done = run_command([sys.executable, "-c", JAX_DEVICE_SCRIPT], REPO, timeout=900,
                       extra_env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2",
                                  "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[1]", done.stdout


# -- numba-cuda without libNVVM ----------------------------------------------------------------
NVVM_SCRIPT = """
from numba.cuda.cudadrv import nvvm
from pytest_gpucheck.backends import _cuda_build
from pytest_gpucheck.backends.numba import backend as numba_backends


def no_libnvvm(*args, **kwargs):
    raise nvvm.NvvmSupportError("libNVVM cannot be found")


nvvm.NVVM.__new__ = no_libnvvm  # as on a machine without the cu13 extra
_cuda_build.driver_problem = lambda: None  # as on a machine with a GPU
print(numba_backends.NumbaCudaBackend(0).probe().reason)
"""


@pytest.mark.slow
def test_numba_cuda_without_libnvvm_is_unavailable_with_the_reason() -> None:
    pytest.importorskip("numba.cuda")
    done = run_command([sys.executable, "-c", NVVM_SCRIPT], REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    reason = done.stdout.strip().splitlines()[-1]
    if " cannot run with NumPy " in reason:  # a pair that does not fit is named first
        pytest.skip(f"the probe stops at this install's NumPy before libNVVM: {reason}")
    assert reason.startswith("libNVVM cannot be loaded (NvvmSupportError: libNVVM cannot be "
                             "found); install pip install 'pytest-gpucheck[cuda13]'"), reason


# -- MPI: oversubscription by physical GPU, availability agreed by every rank -----------------
def test_one_gpu_per_slurm_task_is_not_oversubscribed() -> None:
    from pytest_gpucheck.mpi.binding import RankBinding, describe_bindings

    # SLURM gives each task its own GPU: every rank sees one device, index 0.
    own = [RankBinding(r, "node1", r, 4, 0, 1, "auto", device_id=f"0000:{r}B:00.0")
           for r in range(4)]
    assert not any("WARNING" in line for line in describe_bindings(own))
    shared = [RankBinding(r, "node1", r, 4, 0, 1, "auto", device_id="0000:3B:00.0")
              for r in range(4)]
    warnings = [line for line in describe_bindings(shared) if "WARNING" in line]
    assert warnings == ["  WARNING: 4 ranks share GPU 0000:3B:00.0 on node1 (ranks 0, 1, 2, 3):"
                        " oversubscribed, devices assigned round robin"]


class FakeWorld:
    def __init__(self, everyone: list[dict[str, tuple[bool, str]]]) -> None:
        self.everyone = everyone

    def allgather(self, mine: Any) -> list[Any]:
        return self.everyone


class FakeSelection:
    def __init__(self, probes: dict[str, Any]) -> None:
        from pytest_gpucheck.backends.base import Backend

        self.backends = {name: Backend(0) for name in probes}
        for name, probe in probes.items():
            self.backends[name]._probe_result = probe

    @property
    def probes(self) -> dict[str, Any]:
        return {name: backend.probe() for name, backend in self.backends.items()}

    def backend(self, name: str) -> Any:
        return self.backends[name]


def test_a_backend_unavailable_on_one_rank_is_unavailable_on_all() -> None:
    """Exclusive-process mode: rank 1 cannot open the GPU that rank 0 holds."""
    from pytest_gpucheck.backends.base import Probe
    from pytest_gpucheck.mpi.binding import agree_on_backends

    busy = "cupy failed to initialise: CUDARuntimeError: cudaErrorDevicesUnavailable"
    rank0 = FakeSelection({"numpy": Probe(True), "cupy": Probe(True)})
    rank1 = FakeSelection({"numpy": Probe(True), "cupy": Probe.missing(busy)})
    everyone = [{"numpy": (True, ""), "cupy": (True, "")}, {"numpy": (True, ""),
                                                             "cupy": (False, busy)}]
    lines = agree_on_backends(FakeWorld(everyone), rank0)
    assert agree_on_backends(FakeWorld(everyone), rank1) == []
    assert lines == ["  cupy: unavailable on rank 1, so skipped on every rank"]
    for selection in (rank0, rank1):
        assert selection.probes["numpy"].available
        assert not selection.probes["cupy"].available
    assert rank0.probes["cupy"].reason.startswith(f"unavailable on rank 1 ({busy})")
