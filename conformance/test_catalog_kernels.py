"""Conformance of the kernels a project adds to the catalog
(``pytest_gpucheck.reference_kernels.catalog``).

The bundled kernels have suites of their own.  A kernel added with
:func:`pytest_gpucheck.reference_kernels.catalog.add` (for example from a project's
``conftest.py``, before collection) gets its test here, ``test_<kernel>``,
run like every suite test: once per registered implementation on each
selected backend, under the checks of :mod:`pytest_gpucheck.conformance.harness`, with the
inputs of its spec (:func:`pytest_gpucheck.conformance.specs.spec_for`).  With no such kernel
this module holds no test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_gpucheck.conformance.harness import Cell, check_implementation
from pytest_gpucheck.reference_kernels.catalog import BUNDLED, CATALOG


def _suite_test(kernel: str) -> Callable[[Cell, pytest.FixtureRequest], None]:
    @pytest.mark.gpu_kernel(kernel)
    def test(impl: Cell, request: pytest.FixtureRequest) -> None:
        check_implementation(impl, request)

    test.__name__ = test.__qualname__ = f"test_{kernel}"
    test.__doc__ = f"``{kernel}`` against its catalog entry's reference and tolerance rule."
    return test


for _kernel in CATALOG:
    if _kernel not in BUNDLED:
        globals()[f"test_{_kernel}"] = _suite_test(_kernel)
