"""Hypothesis profiles of the conformance suites, and the ``gpu_kernel`` marker.

A feature plugin (listed in ``FEATURE_PLUGINS``).  Profiles:

``dev``
    The default for local runs: a handful of random examples per test.
``ci``
    ``derandomize=True``: the same examples on every run, so a CI gate is
    stable and a failure reproduces from the node id alone.  The suites use
    it automatically when the ``CI`` environment variable is set, unless
    ``--hypothesis-profile`` names another.
``thorough``
    Many random examples, for nightly runs and before a release.

Without ``--hypothesis-profile`` the suites run under ``dev`` (or ``ci``);
this choice applies to the conformance suites only, so the user's own
hypothesis tests keep their settings.  All three set ``deadline=None``: the
first example of each new shape or dtype includes JIT compilation (Numba,
JAX, NVRTC), which says nothing about the kernel.  The numbers are the
examples of CPU and GPU backends; the CUDA simulator gets half (see
:mod:`pytest_gpucheck.checking.strategies`).  Every profile runs the suites' boundary
sweep (fixed edge cases, the same on every backend) before these examples.
"""

from __future__ import annotations

import pytest

PROFILES: dict[str, dict[str, object]] = {
    "dev": {"max_examples": 10},
    "ci": {"max_examples": 12, "derandomize": True, "database": None},
    "thorough": {"max_examples": 200},
}

#: Under ``--gpu-sanitize`` the conformance suites run 1/SANITIZE_DIVISOR of their
#: profile's examples (at least 2): the sanitizer slows every kernel many times over,
#: and its findings need one bad access, not many examples.
SANITIZE_DIVISOR = 4
_divisor = 1


def use_sanitize_divisor() -> None:
    """In a sanitized worker: the suites run 1/:data:`SANITIZE_DIVISOR` of the examples."""
    global _divisor
    _divisor = SANITIZE_DIVISOR


def examples_divisor() -> int:
    """What this process divides the profile's ``max_examples`` by (1, or
    :data:`SANITIZE_DIVISOR` in a sanitized worker)."""
    return _divisor


MARKER = ("gpu_kernel(name): a conformance test of the bundled kernel `name`; its `impl` "
          "fixture is parametrized over the selected backends x registered implementations.")


def register_profiles() -> None:
    """Register ``dev``, ``ci`` and ``thorough`` with hypothesis (idempotent)."""
    from hypothesis import HealthCheck, settings

    for name, values in PROFILES.items():
        settings.register_profile(
            name,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            **values,  # type: ignore[arg-type]
        )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # tryfirst: hypothesis' own pytest_configure loads --hypothesis-profile, which
    # must already be registered by then.
    config.addinivalue_line("markers", MARKER)
    # Importing hypothesis costs ~0.1 s: register here only when the command
    # line names one of these profiles; the suites' conftest registers them
    # otherwise, so a plain ``pytest`` pays nothing.
    if config.getoption("hypothesis_profile", None) in PROFILES:
        register_profiles()


__all__ = ["MARKER", "PROFILES", "SANITIZE_DIVISOR", "examples_divisor", "register_profiles",
           "use_sanitize_divisor"]
