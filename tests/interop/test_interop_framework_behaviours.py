"""The interop failures of the first H100 run (docs/gpu-runs/2026-11-26-H100/), without a GPU.

Each test rebuilds one behaviour the H100 showed from fakes that act as the
framework did there (a ``__cuda_array_interface__`` with the dict it wrote,
numba-cuda's real ``dummyarray``, NumPy 2.5's ``BufferError``), runs the real
plugin code on it, and fails when the plugin fix or table entry it covers is
reverted.  G-numbers are the causes in that run's NOTES.md.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from documented_fakes import numpy_refusal
from fake_cai import FakeCaiArray, FakeCaiProducer, cai_facts

from pytest_gpucheck.backends.adapter_base import Adapter
from pytest_gpucheck.backends.array_facts import ArrayFacts
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.converters import library_converter
from pytest_gpucheck.interop.documented import DOCUMENTED, Documented, Trigger, changed, judge
from pytest_gpucheck.interop.outcomes import Exchange, Outcome

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


# -- G2: numba-cuda's DeviceNDArray has no Ellipsis, and Numba cannot type void16 ----------
class FakeDeviceNDArray:
    """A numba-cuda ``DeviceNDArray`` stand-in over host memory.

    Assignment goes through numba-cuda's own ``dummyarray`` (which raises
    ``TypeError`` on ``...``, as on the H100) and types the dtype as the
    assignment kernel does (``from_dtype``: void and bfloat16 are refused).
    """

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype

    def is_c_contiguous(self) -> bool:
        return bool(self.host.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self.host.flags.f_contiguous)

    def view(self, dtype: Any) -> FakeDeviceNDArray:
        assert np.dtype(dtype).itemsize == self.dtype.itemsize  # numba's rule for strided views
        return FakeDeviceNDArray(self.host.view(dtype))

    def __setitem__(self, key: Any, value: FakeDeviceNDArray) -> None:
        from numba.cuda.cudadrv import dummyarray
        from numba.np.numpy_support import from_dtype

        dummyarray.Array.from_desc(0, self.shape, self.strides, self.dtype.itemsize)[key]
        from_dtype(self.dtype)  # the assignment kernel's argument typing
        self.host[key] = value.host

    def copy_to_host(self) -> np.ndarray:
        return self.host.copy()


@pytest.fixture
def numba_backend(monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("numba.cuda")
    from pytest_gpucheck.backends.numba.backend import NumbaCudaBackend

    fake_cuda = SimpleNamespace(
        synchronize=lambda: None,
        device_array=lambda shape, dtype: FakeDeviceNDArray(np.zeros(shape, dtype)))
    monkeypatch.setattr(NumbaCudaBackend, "_cuda", lambda self: fake_cuda)
    return NumbaCudaBackend()


@pytest.mark.parametrize("dtype", [np.dtype("float64"), np.dtype("V2"), BF16],
                         ids=["float64", "void16", "bfloat16"])
def test_numba_cuda_to_host_gathers_a_strided_view(numba_backend: Any, dtype: np.dtype) -> None:
    """G2: the anchor "offset and gaps" view, as producer or as imported consumer."""
    base = np.arange(24, dtype=np.uint16 if dtype.itemsize == 2 else np.float64)
    base = base.view(dtype).reshape(4, 6)
    view = base[1:4, 0:6:2]
    got = numba_backend.to_host(FakeDeviceNDArray(view))
    assert got.dtype == dtype
    assert got.tobytes() == np.ascontiguousarray(view).tobytes()


def test_numba_cuda_dummyarray_still_refuses_ellipsis() -> None:
    """The upstream limitation the workaround exists for (report to numba-cuda)."""
    from numba.cuda.cudadrv import dummyarray

    with pytest.raises(TypeError, match="ellipsis"):
        dummyarray.Array.from_desc(0, (3, 3), (48, 16), 8)[...]


# -- CAI producers with the H100's dicts ----------------------------------------------------
#: Host memory behind a ``__cuda_array_interface__`` like the H100's producers wrote.
CaiArray = FakeCaiArray


class JaxGpuArray(CaiArray):
    """jaxlib's CAI: version 2, always read-only, and none at all for bfloat16."""

    def __init__(self, host: np.ndarray) -> None:
        super().__init__(host, version=2, readonly=True)
        if host.dtype == BF16:  # py_array.cc raises AttributeError, so hasattr() is False
            del self.__cuda_array_interface__

    def __getattr__(self, name: str) -> Any:
        if name == "__cuda_array_interface__":
            raise AttributeError("__cuda_array_interface__ is not supported for BF16 buffers.")
        raise AttributeError(name)


class CaiProducer(FakeCaiProducer):
    """A GPU producer whose arrays are host memory with the given CAI flavour."""

    def __init__(self, name: str, make: Any) -> None:
        super().__init__(name)
        self.make = make

    def upload(self, host: np.ndarray) -> Any:
        return self.make(host.copy())

    def writable(self, array: Any) -> bool:
        return not array.readonly


class CaiConsumer(CaiProducer):
    """Imports a CAI the way cupy.asarray / numba.cuda.as_cuda_array / cuda.core do:
    ``np.dtype(typestr)`` over the same pointer; refuses objects without one, as
    numba does (``*obj* doesn't implement the cuda array interface``)."""

    def cai_importer(self) -> Any:
        def import_cai(obj: Any) -> CaiArray:
            if not hasattr(obj, "__cuda_array_interface__"):
                raise TypeError("*obj* doesn't implement the cuda array interface.")
            cai = obj.__cuda_array_interface__
            host = obj.host.view(np.dtype(cai["typestr"]))
            return CaiArray(host, version=3)

        return import_cai


def test_lifetime_reports_a_bfloat16_jax_array_without_cai_as_not_available() -> None:
    """G3: test_exchange said n/a; test_lifetime called it a refusal (before the fix)."""
    from pytest_gpucheck.interop.classify import exchange
    from pytest_gpucheck.interop.lifetime import check_lifetimes

    producer = CaiProducer("jax-gpu", JaxGpuArray)
    consumer = CaiConsumer("numba-cuda", lambda host: CaiArray(host, 3))
    converter = library_converter("cai", "jax-gpu", "numba-cuda")
    case = Case("bfloat16", (2, 3))
    assert exchange(case, producer, consumer, converter).outcome is Outcome.NOT_AVAILABLE
    (result,) = check_lifetimes([case], producer, consumer, converter)
    assert result.outcome is Outcome.NOT_AVAILABLE, result.describe()
    assert "jax-gpu arrays have no __cuda_array_interface__" in result.reason
    assert judge(case, result, converter).kind == "not available"


@pytest.mark.parametrize(("version", "host", "typestr", "problem"), [
    (3, np.zeros((), BF16), None, None),  # cuda-python, the H100's failing draw
    (2, np.zeros((2, 3), BF16), None, None),  # torch-cuda
    (3, np.zeros(3, "float16"), "<V2", "typestr '<V2' (void16) is not '<f2' (float16)"),
    (3, np.zeros(3, BF16), "<f2", "typestr '<f2' (float16) is not '<V2' (bfloat16)"),
    (3, np.zeros(3, "float32"), "<f8", "typestr '<f8' (float64) is not '<f4' (float32)"),
], ids=["bfloat16-v3", "bfloat16-v2", "float16-as-void", "bfloat16-as-half", "wrong-width"])
def test_cai_export_accepts_the_only_typestr_bfloat16_has(
        version: int, host: np.ndarray, typestr: str | None, problem: str | None) -> None:
    """G4: '<V2' is the truthful typestr of bfloat16, and of nothing else."""
    from pytest_gpucheck.interop.cai_export import cai_problems

    array = CaiArray(host, version)
    if typestr is not None:
        array.__cuda_array_interface__["typestr"] = typestr
    problems = cai_problems(array.__cuda_array_interface__, cai_facts(array))
    assert problems == ([problem] if problem else []), problems


# -- G12: NumPy 2.5 raises BufferError from from_dlpack ------------------------------------
@pytest.mark.parametrize("protocol", ["dlpack", "dlpack-copy", "dlpack-nocopy"])
@pytest.mark.parametrize(("error", "kind"), [
    (BufferError("Unsupported dtype in DLTensor."), "ok"),  # NumPy 2.5 (numpy/numpy#31000)
    (RuntimeError("Unsupported dtype in DLTensor."), "ok"),  # NumPy <= 2.4
    (RuntimeError("Unsupported device in DLTensor."), "fail"),  # another refusal: news
], ids=["numpy-2.5", "numpy-2.4", "other-error"])
def test_numpy_refusing_bfloat16_import_under_either_error_type(
        protocol: str, error: Exception, kind: str) -> None:
    converter = library_converter(protocol, "jax-cpu", "numpy")
    case = Case("bfloat16", (2, 3))
    verdict = judge(case, Exchange(Outcome.REFUSES, error=error), converter)
    assert verdict.kind == kind, verdict.message
    if kind == "ok":
        assert verdict.documented is not None
        assert verdict.documented.key == "numpy-refuses-bfloat16-import"


def test_numpy_25_buffererror_through_the_real_numpy_consumer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """G12 end to end: NumPy's adapter, its from_dlpack raising as NumPy 2.5.2 does."""
    from pytest_gpucheck.backends.numpy.backend import NumpyBackend
    from pytest_gpucheck.interop.classify import hand_over

    def from_dlpack_25(x: Any, **_: Any) -> Any:
        raise BufferError("Unsupported dtype in DLTensor.")

    monkeypatch.setattr(np, "from_dlpack", from_dlpack_25)
    consumer = NumpyBackend().interop_adapter()
    converter = library_converter("dlpack", "jax-cpu", "numpy")
    case = Case("bfloat16", (2, 3))
    result, _ = hand_over(case, object(), _HostView(case), consumer,
                          consumer.dlpack_importer(None), converter)
    assert result.outcome is Outcome.REFUSES
    assert result.error_text == "BufferError: Unsupported dtype in DLTensor."
    assert judge(case, result, converter).kind == "ok"


class _HostView(Adapter):
    """A producer that reads back the case's values (only facts and to_host are used)."""

    name = "jax-cpu"

    def __init__(self, case: Case) -> None:
        super().__init__(SimpleNamespace(synchronize=lambda: None))
        self.host = case.host()

    def facts(self, array: Any) -> ArrayFacts:
        host = self.host
        return ArrayFacts(host.ctypes.data, host.shape, host.strides, host.dtype, "cpu", True)

    def to_host(self, array: Any) -> np.ndarray:
        return self.host.copy()


# -- G5..G9: the GPU behaviours, now documented ----------------------------------------------
def _refusal(message: str, exc: type[Exception] = TypeError) -> Exchange:
    before = ArrayFacts(0x7F00_0000, (3,), (8,), np.dtype("float64"), "cuda:0", True)
    return Exchange(Outcome.REFUSES, before, error=exc(message))


JaxRuntimeError = type("JaxRuntimeError", (RuntimeError,), {})

# (producer, consumer, protocol, case, the H100's exchange, verdict kind, entry key)
H100_BEHAVIOURS = [
    ("cupy", "torch-cuda", "cai", Case("bfloat16", (2, 3)),
     _refusal("can't convert np.ndarray of type numpy.void. The only supported types are: "
              "float64, float32"), "ok", "torch-refuses-cai-void"),
    ("jax-gpu", "torch-cuda", "cai", Case("float64", (3,)),
     _refusal("the read only flag is not supported, should always be False"), "ok",
     "torch-refuses-readonly-cai"),
    ("cupy", "cupy", "dlpack-copy", Case("float64", (3,)),
     _refusal("copy=True only supported for copy to CPU.", BufferError), "ok",
     "cupy-refuses-device-copy"),
    ("cupy", "torch-cuda", "dlpack-copy", Case("float64", (3,)),
     _refusal("copy=True only supported for copy to CPU.", BufferError), "ok",
     "cupy-refuses-device-copy"),
    ("torch-cuda", "jax-gpu", "dlpack-copy", Case("float64", (3,)),
     _refusal("UNIMPLEMENTED: PJRT C API does not support HostBufferSemantics other than "
              "HostBufferSemantics::kImmutableOnlyDuringCall", JaxRuntimeError), "known",
     "jax-gpu-copy-true-unimplemented"),
    ("jax-gpu", "cuda-python", "cai", Case("float64", (3,)),
     _refusal("only CUDA Array Interface v3 or above is supported", BufferError), "ok",
     "cuda-core-refuses-cai-v2"),
    # twins that must still fail: the same refusals where nothing documents them
    ("torch-cuda", "cuda-python", "cai", Case("float64", (3,)),
     _refusal("only CUDA Array Interface v3 or above is supported", BufferError), "fail", None),
    ("torch-cuda", "torch-cuda", "dlpack-copy", Case("float64", (3,)),
     _refusal("copy=True only supported for copy to CPU.", BufferError), "fail", None),
    ("cupy", "jax-cpu", "dlpack-copy", Case("float64", (3,)),
     _refusal("UNIMPLEMENTED: PJRT C API does not support HostBufferSemantics",
              JaxRuntimeError), "fail", None),
    ("cupy", "torch-cuda", "cai", Case("float64", (3,)),
     _refusal("can't convert np.ndarray of type numpy.void"), "fail", None),
]


@pytest.mark.parametrize(("producer", "consumer", "protocol", "case", "result", "kind", "key"),
                         H100_BEHAVIOURS,
                         ids=[f"{b[0]}->{b[1]}-{b[2]}-{b[6] or 'undocumented'}"
                              for b in H100_BEHAVIOURS])
def test_each_h100_behaviour_is_judged_as_documented(
        producer: str, consumer: str, protocol: str, case: Case, result: Exchange,
        kind: str, key: str | None) -> None:
    verdict = judge(case, result, library_converter(protocol, producer, consumer))
    assert verdict.kind == kind, verdict.message
    assert (verdict.documented.key if verdict.documented else None) == key


@pytest.mark.parametrize("producer", ["cupy", "torch-cuda", "cuda-python"])
@pytest.mark.parametrize("consumer", ["cupy", "numba-cuda", "cuda-python"])
def test_bfloat16_over_cai_is_a_known_defect_measured_on_fakes(producer: str,
                                                               consumer: str) -> None:
    """G5, measured: a '<V2' producer and a consumer that imports np.dtype(typestr)."""
    from pytest_gpucheck.interop.classify import exchange

    converter = library_converter("cai", producer, consumer)
    result = exchange(Case("bfloat16", (2, 3)),
                      CaiProducer(producer, lambda host: CaiArray(host, 3)),
                      CaiConsumer(consumer, lambda host: CaiArray(host, 3)), converter)
    assert result.problems == ["dtype changed: bfloat16 -> void16"], result.describe()
    verdict = judge(Case("bfloat16", (2, 3)), result, converter)
    assert verdict.kind == "known"
    assert verdict.documented is not None
    assert verdict.documented.key == "cai-cannot-name-bfloat16"
    # the same lost dtype for float16 is no protocol limit: a failure
    float16 = Exchange(Outcome.WRONG, result.producer, result.consumer,
                       ["dtype changed: float16 -> void16"])
    assert judge(Case("float16", (2, 3)), float16, converter).kind == "fail"


def test_cupy_copy_true_refusal_is_documented_in_the_export_check() -> None:
    """G7: test_dlpack_export[cupy] listed the documented refusal as a problem."""
    from pytest_gpucheck.interop.export import check_dlpack_export

    class CupyLike:
        def __init__(self, host: np.ndarray) -> None:
            self.host = host

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)

        def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                       dl_device: Any = None, copy: Any = None) -> Any:
            if copy is True:
                raise BufferError("copy=True only supported for copy to CPU.")
            return self.host.__dlpack__()

    def adapter(name: str) -> Any:
        return SimpleNamespace(name=name, device="cuda:0",
                               produce=lambda case: CupyLike(case.host()),
                               facts=lambda array: cai_facts(CaiArray(array.host, 3)))

    report = check_dlpack_export(adapter("cupy"), Case("float64", (3,)))
    assert report.problems == []
    assert list(report.documented) == ["cupy-refuses-device-copy"]
    twin = check_dlpack_export(adapter("torch-cuda"), Case("float64", (3,)))
    assert twin.problems == ["__dlpack__(copy=True) raised BufferError: copy=True only "
                             "supported for copy to CPU."]


# -- a documented behaviour that stops reproducing -----------------------------------------
def _measure(entry: Documented) -> tuple[Any, Exchange]:
    from pytest_gpucheck.backends.numpy.backend import NumpyBackend
    from pytest_gpucheck.interop.classify import exchange

    adapter = NumpyBackend().interop_adapter()
    assert entry.trigger is not None
    converter = library_converter("dlpack", "numpy", "numpy")
    result = exchange(entry.trigger.case, adapter, adapter, converter)
    return judge(entry.trigger.case, result, converter), result


def test_a_refusal_that_now_works_is_reported_as_changed_in_the_installed_version() -> None:
    import importlib.metadata

    entry = numpy_refusal()
    verdict, result = _measure(entry)  # numpy->numpy float64 is zero-copy today
    change = changed(entry, verdict, result)
    assert change is not None
    assert change.welcome
    version = importlib.metadata.version("numpy")
    assert change.message.startswith(
        f"fake-numpy-refuses-float64 changed in numpy {version}: numpy->numpy via dlpack "
        "is now zero-copy (documented: refuses; seen with numpy 1.0.0)")


def test_a_change_names_every_framework_the_entry_was_seen_with() -> None:
    """numpy's refusal to JAX stopped with JAX 0.12, not with a NumPy release: naming
    the entry's own framework alone ("changed in numpy 2.5.5") pointed at the wrong
    changelog.  Here the fake entry was also seen with pytest."""
    import importlib.metadata

    entry = numpy_refusal(seen=("numpy 1.0.0", "pytest 1.0.0"))
    verdict, result = _measure(entry)
    change = changed(entry, verdict, result)
    assert change is not None
    assert change.welcome
    numpy, pytest_version = (importlib.metadata.version(n) for n in ("numpy", "pytest"))
    assert change.message.startswith(
        f"fake-numpy-refuses-float64 changed in numpy {numpy}, pytest {pytest_version}: ")


def test_a_change_for_the_worse_fails_naming_the_versions() -> None:
    # The entry claims a copy; the trigger now refuses with an error nothing documents.
    entry = numpy_refusal(outcome=Outcome.COPIES, trigger=Trigger("numpy", "numpy",
                                                           Case("float64", (3,))))
    result = _refusal("something new", BufferError)
    verdict = judge(Case("float64", (3,)), result, library_converter("dlpack", "numpy", "numpy"))
    change = changed(entry, verdict, result)
    assert change is not None
    assert not change.welcome
    assert "no longer reproduces with numpy->numpy via dlpack: measured fail/refuses" in \
        change.message
    assert "seen with: numpy 1.0.0; installed: numpy " in change.message


def test_an_entry_that_still_reproduces_has_no_change() -> None:
    (entry,) = [e for e in DOCUMENTED if e.key == "numpy-refuses-bfloat16-export"]
    from pytest_gpucheck.backends.numpy.backend import NumpyBackend
    from pytest_gpucheck.interop.classify import exchange

    adapter = NumpyBackend().interop_adapter()
    assert entry.trigger is not None
    converter = library_converter("dlpack", "numpy", "numpy")
    result = exchange(entry.trigger.case, adapter, adapter, converter)
    assert changed(entry, judge(entry.trigger.case, result, converter), result) is None


def test_every_entry_names_its_framework_and_the_versions_it_was_seen_with() -> None:
    import re

    for entry in DOCUMENTED:
        assert entry.seen, entry.key
        assert all(re.fullmatch(r"[a-z][\w.-]* \d+(\.\d+)+\S*", item) for item in entry.seen), \
            entry.seen
        if entry.trigger is not None:
            assert entry.framework, entry.key


# -- a core-only install (no ml_dtypes) ------------------------------------------------------
@pytest.mark.slow
def test_core_only_install_skips_the_bfloat16_triggers_with_the_reason(tmp_path: Any) -> None:
    """Issue 23: `pip install -e .` has no ml_dtypes; the main job must not fail on it.

    The project's conftest hides ml_dtypes the way a core-only environment lacks
    it (an import of it raises ImportError); the command is the one the docs print.
    """
    from user_runs import junit_outcomes, run_pytest

    (tmp_path / "conftest.py").write_text(
        "import sys\n\nsys.modules['ml_dtypes'] = None  # as if not installed\n",
        encoding="utf-8")
    result = run_pytest(tmp_path, "--pyargs", "pytest_gpucheck.conformance.test_interop",
                        "--gpu-backends=numpy", "-k", "documented", "-rs",
                        "--junitxml=out.xml", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    outcomes = junit_outcomes(tmp_path / "out.xml")
    name = "test_documented_behaviour_reproduces[numpy-refuses-bfloat16-export]"
    status, message = outcomes[name]
    assert status == "skipped", outcomes
    assert "numpy-refuses-bfloat16-export: its trigger needs bfloat16: bfloat16 needs the " \
        "ml_dtypes package (pip install ml_dtypes)" in message


@pytest.mark.slow
def test_changed_behaviours_through_the_suite(tmp_path: Any) -> None:
    """Both paths end to end: a fake entry whose refusal now works is skipped as
    "changed in numpy VERSION" and listed in the report; a fake entry whose
    trigger now does something no better fails naming the versions."""
    import importlib.metadata

    from user_runs import junit_outcomes, run_pytest

    (tmp_path / "conftest.py").write_text('''
import pytest_gpucheck.interop.documented as documented
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.outcomes import Outcome

fake = dict(source="https://example.invalid", protocols=("dlpack",), producers="numpy",
            framework="numpy", seen=("numpy 1.0.0",))
documented.DOCUMENTED = documented.DOCUMENTED + (
    documented.Documented(key="fake-now-works", outcome=Outcome.REFUSES, summary="old refusal",
        error="^BufferError: old", trigger=documented.Trigger("numpy", "numpy",
        Case("float64", (3,))), **fake),
    documented.Documented(key="fake-other-refusal", outcome=Outcome.REFUSES,
        summary="a refusal with another message", error="^BufferError: nope",
        trigger=documented.Trigger("numpy", "numpy", Case("bfloat16", (3,))), **fake),
)
''', encoding="utf-8")
    result = run_pytest(tmp_path, "--pyargs", "pytest_gpucheck.conformance.test_interop",
                        "--gpu-backends=numpy", "-k", "fake", "-rs",
                        "--junitxml=out.xml", timeout=900)
    outcomes = junit_outcomes(tmp_path / "out.xml")
    version = importlib.metadata.version("numpy")
    status, message = outcomes["test_documented_behaviour_reproduces[fake-now-works]"]
    assert status == "skipped", outcomes
    assert f"fake-now-works changed in numpy {version}: numpy->numpy via dlpack is now " \
        "zero-copy" in message
    status, message = outcomes["test_documented_behaviour_reproduces[fake-other-refusal]"]
    assert status == "failure", outcomes
    assert "seen with: numpy 1.0.0; installed: numpy" in message
    assert "documented behaviours that changed:" in result.stdout
    assert result.returncode == 1
