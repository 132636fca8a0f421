"""A run from the checkout without pytest-xdist: the addopts' ``-n auto --dist loadscope``.

pyproject.toml's addopts run the project's suite on every core through pytest-xdist.
Without it (a core-only install, ``pip install -e .``) pytest refused every run from the
checkout, ``pytest conformance`` included: "unrecognized arguments: -n --dist loadscope"
(exit 4).  The checkout's ``conftest.py`` accepts and ignores them where pytest-xdist is
not loaded.  Here pytest-xdist is installed, so ``-p no:xdist`` unloads it: pytest then
registers its options exactly as in an install without it (plugins load from entry
points before the initial conftests; the conftest asks whether one named ``xdist`` was
registered), and the run is the README's command, from the checkout, in a subprocess.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from user_runs import run_pytest

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(CHECKOUT, *args, timeout=600)


def test_pytest_conformance_runs_from_the_checkout_without_xdist() -> None:
    done = run("-p", "no:xdist", "conformance/test_elementwise.py", "--gpu-backends=numpy",
               "-k", "vector_add")
    output = done.stdout + done.stderr
    assert "unrecognized arguments" not in output, output[-2000:]
    assert done.returncode == 0, output[-3000:]
    assert "pytest-xdist is not loaded: -n auto (this checkout's addopts) is ignored" \
        in output, output[:2000]
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-500:]


def test_with_xdist_the_checkout_conftest_changes_nothing() -> None:
    """The twin: where pytest-xdist is loaded its -n is its own (the help names it), and
    the header says nothing of this file."""
    done = run("--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pytest-xdist is not loaded" not in done.stdout
    assert "distributed and subprocess testing" in done.stdout
