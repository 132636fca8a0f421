"""Every framework lives behind the Backend protocol; the features never branch on a name."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pytest_gpucheck.backends import (
    BACKENDS,
    CPU_BACKENDS,
    INTEROP_BACKENDS,
    NO_INTEROP_ADAPTER,
    backend_class,
    get_backend,
)
from pytest_gpucheck.backends.array_ops import ArrayOps
from pytest_gpucheck.backends.base import BackendUnavailable
from pytest_gpucheck.backends.timing import RoundTimer

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_gpucheck"
#: What a feature module would write to special-case a framework.
NAME_BRANCH = re.compile(
    r"""backend(?:_name|\.name)\s*(?:==|!=|in\s*\()|"""
    r"""backend(?:_name|\.name)\.startswith\(|"""
    r"""\b(?:consumer|producer|adapter)\.name\s*(?:==|!=|in\s*\()""")


def test_features_call_the_protocol_instead_of_branching_on_backend_names() -> None:
    offenders = []
    for folder in ("bench", "interop", "mpi"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if NAME_BRANCH.search(line):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    for name in ("checking/device_views.py", "multi_device.py", "checking/strategies.py",
                 "fixtures.py"):
        for number, line in enumerate((PACKAGE / name).read_text(encoding="utf-8").splitlines(), 1):
            if NAME_BRANCH.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert not offenders, "move these into backends/<framework>/:\n" + "\n".join(offenders)


def test_the_branch_pattern_catches_a_name_branch() -> None:
    assert NAME_BRANCH.search('    if backend.name == "cupy":')
    assert NAME_BRANCH.search('    if backend_name in ("jax-cpu", "jax-gpu"):')
    assert NAME_BRANCH.search('    if consumer.name == "torch-cuda":')
    assert NAME_BRANCH.search('    if name.startswith("x") or backend.name.startswith("jax"):')
    assert not NAME_BRANCH.search('    key = (backend.name, backend.device_index)')


def test_every_backend_module_lives_in_its_framework_folder() -> None:
    for name, target in BACKENDS.items():
        module, _ = target.split(":")
        folder, _, leaf = module.partition(".")
        assert leaf == "backend", (name, target)
        assert (PACKAGE / "backends" / folder / "backend.py").is_file(), name
        assert backend_class(name).name == name


def test_interop_adapters_exist_exactly_where_the_registry_says() -> None:
    assert set(INTEROP_BACKENDS) | set(NO_INTEROP_ADAPTER) == set(BACKENDS)
    for name in INTEROP_BACKENDS:
        method = backend_class(name).interop_adapter
        assert method is not backend_class("numba-cpu").interop_adapter, name
    with pytest.raises(LookupError, match="numba-cpu has no interop adapter"):
        get_backend("numba-cpu").interop_adapter()


@pytest.mark.parametrize("name", [n for n in CPU_BACKENDS if n != "numba-cudasim"])
def test_cpu_backends_answer_the_protocol(name: str) -> None:
    """The simulator needs its own process; its protocol runs in the bench and MPI suites.
    A framework that is not installed (the core alone: `nox -s minimal`) skips with the
    probe's reason."""
    backend = get_backend(name)
    probe = backend.probe()
    if not probe.available:
        pytest.skip(f"{name}: {probe.reason}")
    assert isinstance(backend.event_timer("wall"), RoundTimer)
    if name == "array-api-strict":
        # No MPI operations: the ops_for skip reads as not applicable in the matrix.
        with pytest.raises(BackendUnavailable, match=r"^not applicable: array-api-strict"):
            backend.mpi_ops()
    else:
        assert isinstance(backend.mpi_ops(), ArrayOps)
    assert backend.runtime_version() == ""  # no CUDA runtime on the CPU tier
    assert backend.devices()  # at least the host (JAX: its CPU devices)
    src = backend.to_device(np.arange(6, dtype=np.float32))
    dst = backend.empty((6,), np.float32)
    copied = backend.copy(src, dst)
    backend.wait_for(copied)
    np.testing.assert_array_equal(backend.to_host(copied), np.arange(6, dtype=np.float32))
    if name in INTEROP_BACKENDS:
        assert backend.interop_adapter().name == name


def test_simulator_and_jit_facts() -> None:
    assert [n for n in BACKENDS if backend_class(n).is_simulator] == ["numba-cudasim"]
    assert [n for n in BACKENDS if backend_class(n).traces_under_jit] == ["jax-cpu", "jax-gpu"]
    assert [n for n in BACKENDS if backend_class(n).single_threaded] == [
        "numpy", "numba-cudasim", "array-api-strict"]


def test_no_module_name_looks_like_numba_cuda_to_its_import_redirector() -> None:
    """numba-cuda's redirector matches ``"numba.cuda" in name``: a module of ours whose dotted
    name contains it (``backends/numba/cuda_x.py``) fails to import with RecursionError
    wherever the redirector is installed (every fresh environment with numba-cuda)."""
    package = Path(__file__).parents[2] / "pytest_gpucheck"
    names = [".".join(("pytest_gpucheck", *path.relative_to(package).with_suffix("").parts))
             for path in package.rglob("*.py")]
    assert len(names) > 50
    assert [name for name in names if "numba.cuda" in name] == []
