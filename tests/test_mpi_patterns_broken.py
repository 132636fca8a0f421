"""Deliberately broken distributed patterns are rejected: a row-block matrix multiply that
drops the remainder rows of an uneven split, and ranks that share one random seed.

They run as a user's own test file on real ranks under ``mpiexec``; each broken
variant must fail with the message that points at its bug, and its control
(the bundled implementation, same strategy) must pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_gpucheck.mpi.launcher import find_executable

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    find_executable("mpiexec") is None, reason="needs mpiexec: pip install 'pytest-gpucheck[mpi]'"
)]
REPO_ROOT = Path(__file__).resolve().parents[1]

BROKEN = '''
import numpy as np
import pytest
from hypothesis import given, strategies as st

from pytest_gpucheck.backends import get_backend
from pytest_gpucheck.mpi.hypothesis_lockstep import mpi_settings
from pytest_gpucheck.mpi.patterns import (
    check_monte_carlo_streams, check_row_block_matmul, independent_samples,
)
from pytest_gpucheck.mpi.transport import DirectTransport

NUMPY = get_backend("numpy")
DIRECT = DirectTransport()


def remainder_dropped(m, parts, index):
    """Every rank takes m // parts rows: the remainder of an uneven split is dropped."""
    base = m // parts
    return index * base, (index + 1) * base


def shared_seed(comm, seed, n):
    """Every rank seeds its generator with the same seed."""
    return np.random.default_rng(seed).random((n, 2))


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("partition", [None, remainder_dropped], ids=["bundled", "remainder"])
@mpi_settings(max_examples=8)
@given(m=st.integers(0, 9), seed=st.integers(0, 100))
def test_matmul(m, seed, partition, mpi_comm):
    rng = np.random.default_rng(seed)
    a = rng.integers(-9, 10, (m, 3)).astype("int64")
    b = rng.integers(-9, 10, (3, 2)).astype("int64")
    kwargs = {} if partition is None else {"partition": partition}
    check_row_block_matmul(mpi_comm, NUMPY, DIRECT, a, b, **kwargs)


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("draw", [independent_samples, shared_seed], ids=["bundled", "shared"])
@mpi_settings(max_examples=3)
@given(seed=st.integers(0, 2**31 - 1))
def test_streams(seed, draw, mpi_comm):
    check_monte_carlo_streams(mpi_comm, seed, 2048, draw=draw)
'''


def test_broken_patterns_are_rejected(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", timeout=240)
    out = result.stdout.str()
    for test in ("test_matmul", "test_streams"):
        assert re.search(rf"::{test}\[bundled\] PASSED", out), f"control {test} must pass"
    result.assert_outcomes(passed=2, failed=2)
    remainder = _failure(out, "test_matmul[remainder]")
    assert "element(s) lost (the remainder of an uneven split?)" in remainder
    assert "C has shape" in remainder
    shared = _failure(out, "test_streams[shared]")
    assert re.search(r"ranks 0 and 1 drew the same point .*: they share a random stream", shared)


def _failure(out: str, test: str) -> str:
    start = out.index(f"_ {test} _")
    stop = out.find("\n___", start + len(test) + 4)
    return out[start : stop if stop > 0 else None]
