"""Interop behaviours of some releases only, and what differs between the releases the
plugin supports: a documented entry's ``since``/``before`` and JAX's two layout APIs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from documented_fakes import numpy_refusal

from pytest_gpucheck.backends.array_facts import ArrayFacts
from pytest_gpucheck.backends.jax.compat import major_to_minor
from pytest_gpucheck.interop import documented_entry
from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.converters import library_converter
from pytest_gpucheck.interop.documented import DOCUMENTED, release
from pytest_gpucheck.interop.outcomes import Exchange, Outcome


def _refusal() -> Exchange:
    facts = ArrayFacts(0x7F00_0000, (3,), (8,), np.dtype("float64"), "cpu", False)
    return Exchange(Outcome.REFUSES, facts, error=BufferError("old"))


def test_release_reads_the_numeric_part() -> None:
    assert release("2.3.0+cu121") == (2, 3, 0)
    assert release("2.13.0+cpu") == (2, 13, 0)
    assert release("0.10.0rc1") == (0, 10, 0)
    assert release("2.9") < release("2.13.0") < release("2.13.1")


def test_an_entry_explains_only_the_releases_it_names() -> None:
    import importlib.metadata

    version = importlib.metadata.version("numpy")
    major = release(version)[0]
    case, result = Case("float64", (3,)), _refusal()
    converter = library_converter("dlpack", "numpy", "numpy")
    inside = numpy_refusal(since=version, before=f"{major + 1}")
    assert inside.applies()
    assert inside.matches(case, result, converter)
    # The twins: the installed release is past `before`, or not yet `since`.
    gone = numpy_refusal(before=version)
    assert not gone.applies()
    assert not gone.matches(case, result, converter)
    future = numpy_refusal(since=f"{major + 1}")
    assert not future.applies()
    assert not future.matches(case, result, converter)
    assert future.releases == f"numpy {major + 1} and later"
    assert gone.releases == f"numpy before {version}"
    assert numpy_refusal().applies()
    assert numpy_refusal().releases == "every numpy release"


@pytest.mark.parametrize(("installed", "applies"), [
    ("torch 2.3.0", True), ("torch 2.8.0", True), ("torch 2.9.0", False),
    ("torch 2.13.0+cpu", False), (None, False)])
def test_torch_takes_the_copy_keywords_from_2_9(monkeypatch: pytest.MonkeyPatch,
                                                installed: str | None, applies: bool) -> None:
    (entry,) = [e for e in DOCUMENTED if e.key == "torch-dlpack-no-copy-keywords"]
    monkeypatch.setattr(documented_entry, "installed_version", lambda framework: installed)
    assert entry.applies() is applies


@pytest.mark.parametrize(("installed", "refuses", "copies"), [
    ("jax 0.5.1", False, True), ("jax 0.6.2", False, True), ("jax 0.7.0", True, False),
    ("jax 0.10.2", True, False)])
def test_jax_copy_false_refuses_an_unaligned_buffer_from_0_7(
        monkeypatch: pytest.MonkeyPatch, installed: str, refuses: bool, copies: bool) -> None:
    """Before JAX 0.7 copy=False copied (a known defect); from 0.7 on it refuses."""
    entries = {e.key: e for e in DOCUMENTED}
    monkeypatch.setattr(documented_entry, "installed_version", lambda framework: installed)
    assert entries["jax-refuses-unaligned-nocopy"].applies() is refuses
    assert entries["jax-nocopy-copies-unaligned"].applies() is copies


def test_jax_layout_is_read_through_either_api() -> None:
    """Newer JAX: ``array.format.layout``; JAX 0.5.1: ``array.layout.device_local_layout``."""
    newer = SimpleNamespace(format=SimpleNamespace(layout=SimpleNamespace(
        major_to_minor=(1, 0))))
    older = SimpleNamespace(layout=SimpleNamespace(device_local_layout=SimpleNamespace(
        major_to_minor=(1, 0))))
    assert major_to_minor(newer) == (1, 0)
    assert major_to_minor(older) == (1, 0)
    assert major_to_minor(SimpleNamespace()) is None
