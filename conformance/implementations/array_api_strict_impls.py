"""array-api-strict has no kernels of its own: every bundled kernel is not applicable there.

array-api-strict is the array API standard's reference namespace, not a
framework to write kernels in: a kernel written with the standard's names
runs on it as it runs on every backend's ``xp``, which is what a project's own
``xp`` tests check.  So the bundled suites mark each catalog kernel not
applicable on it, with this reason, instead of a column of "no implementation"
skips; an implementation a project registers for it is still checked.
"""

from __future__ import annotations

from pytest_gpucheck.reference_kernels.catalog import CATALOG
from pytest_gpucheck.registry import not_applicable

REASON = ("array-api-strict has no kernels of its own (the standard's reference namespace: "
          "run your xp tests on it)")

for _kernel in CATALOG:
    not_applicable(_kernel, "array-api-strict", REASON)
