"""The gate's progress lines start on a line of their own.

Under ``-q`` pytest writes its progress letters (``.F``) with no file name before them,
so ``ensure_newline`` (which goes by the file name) left the next progress line glued
to an ``F``: ``Fgpucheck gate: benchmark 2 of 30 ...``.
"""

from __future__ import annotations

import pytest


@pytest.mark.slow  # two pytest runs (in-process), about 3 s each
@pytest.mark.parametrize("verbosity", [[], ["-q"]])
def test_a_progress_line_after_a_progress_letter_starts_a_line(
        pytester: pytest.Pytester, verbosity: list[str]) -> None:
    pytester.makepyfile(test_progress="""
        from pytest_gpucheck.bench.plugin import _write_now


        def test_first():
            assert False


        def test_second(request):
            _write_now(request.config, "gpucheck gate: benchmark 2 of 2 (a line)")
        """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n0", *verbosity)
    result.assert_outcomes(passed=1, failed=1)
    lines = result.outlines
    assert "gpucheck gate: benchmark 2 of 2 (a line)" in lines, lines
