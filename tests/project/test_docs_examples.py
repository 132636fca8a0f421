"""The user-test examples in README.md and docs/getting-started.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def python_blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def test_files(path: Path) -> list[str]:
    """The blocks that are whole test modules (they define a runnable test)."""
    return [block for block in python_blocks(path) if "def test_scale" in block]


test_files.__test__ = False  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("document", ["README.md", "docs/getting-started.md"])
def test_user_test_example_runs_on_every_cpu_backend(
    pytester: pytest.Pytester, document: str
) -> None:
    (block,) = test_files(ROOT / document)
    pytester.makepyfile(test_example=block)
    result = pytester.runpytest("--gpu-backends=cpu", "-v")
    # numba-cudasim has no array namespace, so `xp` skips it with that reason.
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["*test_scale?jax-cpu? PASSED*", "*test_scale?torch-cpu? PASSED*"])


def test_readme_registration_example_registers_an_implementation(
    pytester: pytest.Pytester,
) -> None:
    (block,) = [b for b in python_blocks(ROOT / "README.md") if "implements(" in b]
    pytester.makeconftest(block)
    pytester.makepyfile(
        """
        import numpy as np
        from pytest_gpucheck import implementations

        def test_registered():
            (impl,) = implementations("vector_add", backend="numpy", origin="user")
            assert impl.name == "mine" and impl.writes_out and not impl.takes_launch
            out = np.empty(3)
            impl.func(np.ones(3), np.arange(3.0), out=out)
            np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


TEXT_BLOCK = re.compile(r"```text\n(.*?)```", re.DOTALL)
VERSION = re.compile(r"^(  \S+\s+)\d\S*\s+")  # a backend line's version column


def _normalised(line: str) -> str:
    """A sample line without what differs between machines: versions, the progress
    line's percentage."""
    line = VERSION.sub(r"\1<version> ", line.rstrip())
    return re.sub(r"\s+\[\s*\d+%\]$", "", line)


def _cupy_as_probed_here(line: str) -> str:
    """The sample's cupy line is a machine's without CuPy ("cupy is not installed"); where
    a CUDA build of CuPy is installed but no device can be used, the run honestly skips
    cupy for that reason instead: the line then expected is the sample's with this
    machine's probe reason.  Every other line, and the cupy line without CuPy, as written."""
    import importlib.util

    if not line.startswith("  cupy ") or importlib.util.find_spec("cupy") is None:
        return line
    from pytest_gpucheck.backends import get_backend

    probe = get_backend("cupy").probe()
    if probe.available:
        return line
    head, _, _ = line.partition("skipped: ")
    return f"{head}skipped: {probe.reason}"


@pytest.mark.slow
def test_getting_started_sample_output_is_a_real_run(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The sample printed `...sss.sssss` (12 results for 10 backends) while a run
    # printed `..s..sssss`: now each sample line must be a line of the real run.
    # The user's run is no pytest-xdist worker (this test may be one: its header would say so).
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    document = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    (block,) = test_files(ROOT / "docs" / "getting-started.md")
    (sample,) = [b for b in TEXT_BLOCK.findall(document) if "$ pytest --gpu-backends=all" in b]
    command, *lines = sample.strip().splitlines()
    pytester.makepyfile(test_scale=block)
    # In-process: the lines printed are the plugin's, and a fresh interpreter adds none.
    result = pytester.runpytest("-p", "no:cacheprovider",
                                *command.removeprefix("$ pytest ").split())
    real = {_normalised(line) for line in result.stdout.lines}
    lines = [_cupy_as_probed_here(line) for line in lines]
    missing = [line for line in lines if line.strip() != "..." and _normalised(line) not in real]
    assert not missing, "\n".join(["not in the real run:", *missing, "", *result.stdout.lines])


def test_getting_started_installs_from_a_checkout() -> None:
    """The package is not on PyPI: ``pip install 'pytest-gpucheck[cpu]'`` found nothing.
    Every install command of getting-started's Install section names a local path
    (``.`` in the checkout), with extras pyproject.toml declares."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")

    document = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = document.split("## Install", 1)[1].split("\n## ", 1)[0]
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["project"]["optional-dependencies"])
    commands = re.findall(r"^pip install (-e )?'([^']+)'", section, re.MULTILINE)
    assert len(commands) >= 4, section
    for _, target in commands:
        where, _, wanted = target.partition("[")
        assert where in (".", "/path/to/pytest-gpucheck"), target
        assert set(wanted.rstrip("]").split(",")) <= extras, target
