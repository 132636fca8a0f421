"""The examples in docs/interop.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "interop.md"
BLOCKS = re.compile(r"```python\n(.*?)```", re.DOTALL).findall(DOC.read_text(encoding="utf-8"))


def block_with(text: str) -> str:
    (block,) = [b for b in BLOCKS if text in b]
    return block


def test_assert_shares_memory_example_passes(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("torch")
    pytester.makepyfile(test_example=block_with("assert_shares_memory("))
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.slow
def test_converter_example_passes_the_suite(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(block_with("@converter("))
    profile = settings.get_current_profile_name()
    try:
        result = pytester.runpytest("--pyargs", "pytest_gpucheck.conformance.test_interop",
                                    "-k", "user:", "--gpu-backends=numpy,torch-cpu")
    finally:
        settings.load_profile(profile)
    result.assert_outcomes(passed=2)  # test_exchange and test_lifetime
    result.stdout.fnmatch_lines(["interop user:tensor_to_numpy:", "*torch-cpu*zero-copy*"])
