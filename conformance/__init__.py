"""The bundled conformance suites and implementations.

``pytest_gpucheck.conformance.specs`` describes each kernel (inputs, tolerance, output
initialisation); the ``test_*.py`` modules check every registered
implementation of each kernel on every selected backend; and
``pytest_gpucheck.conformance.implementations`` registers the bundled implementations.
Run the suites in any project with ``pytest --gpu-conformance``.
"""

from __future__ import annotations
