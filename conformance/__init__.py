"""The bundled conformance suites and implementations.

``pytest_gpucheck.conformance.specs`` describes each kernel (inputs, tolerance, output
initialisation); the ``test_*.py`` modules check every registered
implementation of each kernel on every selected backend; and
``pytest_gpucheck.conformance.implementations`` registers the bundled implementations.
Run the suites in any project with ``pytest --gpu-conformance``.

This folder installs as ``pytest_gpucheck.conformance``.  In a checkout,
pytest imports the suite files (``test_*.py``, ``conftest.py``) by their path,
as modules of a package named after the folder, so this ``__init__`` runs a
second time under the name ``conformance``: it must hold no state, and the suite files import
everything else absolutely from ``pytest_gpucheck.conformance`` (never
relatively), so that every other module is loaded once
(``scripts/check_layers.py`` enforces it).
"""

from __future__ import annotations
