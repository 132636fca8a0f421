"""A fake documented interop behaviour, for the tests of the documented table's logic."""

from __future__ import annotations

from typing import Any

from pytest_gpucheck.interop.cases import Case
from pytest_gpucheck.interop.documented import Documented, Trigger
from pytest_gpucheck.interop.outcomes import Outcome


def numpy_refusal(**changes: Any) -> Documented:
    """A documented refusal by NumPy of a float64 exchange with itself ("BufferError: old"),
    which NumPy does not make: its trigger no longer reproduces it; ``changes`` override
    any field."""
    base = {"key": "fake-numpy-refuses-float64", "outcome": Outcome.REFUSES,
            "summary": "a refusal NumPy used to make", "source": "https://example.invalid",
            "protocols": ("dlpack",), "trigger": Trigger("numpy", "numpy", Case("float64", (3,))),
            "producers": "numpy", "error": r"^BufferError: old", "framework": "numpy",
            "seen": ("numpy 1.0.0",)}
    return Documented(**{**base, **changes})
