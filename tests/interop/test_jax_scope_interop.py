"""The interop suite's documented-behaviour items run on the backends of their trigger, so
JAX's 64-bit mode (``Backend.item_scope``) reaches them; a plain test in the same run keeps
JAX's defaults."""

from __future__ import annotations

import pytest
from user_runs import assert_lines, run_pytest, summary_counts

PLAIN = """
def test_plain():
    import jax.numpy as jnp

    assert jnp.ones(1).dtype == jnp.float32  # no 64-bit mode outside our items
"""


@pytest.mark.slow  # a fresh interpreter for its project: left out of the fast loop
def test_documented_items_on_jax_cpu_run_in_64_bit_mode(pytester: pytest.Pytester) -> None:
    """Without the scope, numpy->jax-cpu of a float64 case arrives as float32 and
    ``jax-copies-unaligned`` fails with "dtype changed: float64 -> float32"."""
    pytest.importorskip("jax")
    pytester.makepyfile(test_plain=PLAIN)
    # A fresh interpreter, as a user's run: JAX's 64-bit switch is process-wide, and an
    # in-process run inherits whatever an earlier test of this xdist worker left it at
    # (the plain test read float64 once in a full run).
    result = run_pytest(
        pytester.path, "test_plain.py", "--pyargs", "pytest_gpucheck.conformance.test_interop",
        "--gpu-backends=numpy,jax-cpu", "-n0", "-rA",
        "-k", "plain or documented_behaviour_reproduces and jax-", timeout=600)
    assert_lines(result.stdout, [
        "PASSED *test_documented_behaviour_reproduces[[]jax-copies-unaligned[]]"])
    outcomes = summary_counts(result.stdout)
    assert "failed" not in outcomes, result.stdout
    assert outcomes["passed"] >= 4  # the plain test and three jax-cpu entries
