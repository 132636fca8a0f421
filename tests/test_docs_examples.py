"""The user-test examples in README.md and docs/getting-started.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
    result.assert_outcomes(passed=4, skipped=1)
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
