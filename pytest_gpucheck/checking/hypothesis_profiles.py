"""Hypothesis profiles of the conformance suites, and the ``gpu_kernel`` marker.

A feature plugin (listed in ``FEATURE_PLUGINS``).  The profiles carry the plugin's name,
so that they never meet a project's own: hypothesis's documentation names its profiles
``ci`` and ``dev``, projects register those names in their conftest.py, and hypothesis
registers (and, on a CI machine, loads) a ``ci`` of its own.  The plugin never registers,
replaces or loads any of those (it registered its own under the same names before, over
the project's, and a project's ``--hypothesis-profile=ci`` ran 12 examples instead of its
own 1,000).

``gpucheck-dev``
    The default for local runs: a handful of random examples per test.
``gpucheck-ci``
    ``derandomize=True``: the same examples on every run, so a CI gate is
    stable and a failure reproduces from the node id alone.  The suites use
    it automatically when the ``CI`` environment variable is set.
``gpucheck-thorough``
    Many random examples, for nightly runs and before a release.

Which one the conformance suites run under is decided by the suites themselves, for
their own tests only (``conformance_settings`` in the harness): the profile named by
``--hypothesis-profile`` when it is one of these, ``gpucheck-ci`` when the loaded profile
is a ``ci`` (hypothesis loads its own on a CI machine; the suites' CI runs stay
derandomized at 12 examples whoever registered that ``ci``), another profile the user
loaded as it is, else ``gpucheck-ci`` under ``CI`` and ``gpucheck-dev`` otherwise.  The
user's own hypothesis tests run under whatever profile the user (or hypothesis) loaded;
``--hypothesis-profile=gpucheck-ci`` loads ours for them too, as any profile named there.

All three set ``deadline=None``: the first example of each new shape or dtype includes
JIT compilation (Numba, JAX, NVRTC), which says nothing about the kernel.  The numbers
are the examples of CPU and GPU backends; the CUDA simulator gets half (see
:mod:`pytest_gpucheck.checking.strategies`).  Every profile runs the suites' boundary
sweep (fixed edge cases, the same on every backend) before these examples.
"""

from __future__ import annotations

import pytest

PROFILES: dict[str, dict[str, object]] = {
    "gpucheck-dev": {"max_examples": 10},
    "gpucheck-ci": {"max_examples": 12, "derandomize": True, "database": None},
    "gpucheck-thorough": {"max_examples": 200},
}

#: The profile names the plugin used before it named its own (``dev``, ``ci``,
#: ``thorough``): ``--hypothesis-profile=dev`` where nothing registered ``dev`` is a usage
#: error that names ours.
FORMER_NAMES: dict[str, str] = {name.removeprefix("gpucheck-"): name for name in PROFILES}
#: The profile the suites take when the loaded one is a ``ci`` (hypothesis's own, loaded
#: on a CI machine, or a project's).
CI_PROFILE = "gpucheck-ci"
DEV_PROFILE = "gpucheck-dev"

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
    """Register ``gpucheck-dev``, ``gpucheck-ci`` and ``gpucheck-thorough`` with hypothesis,
    each unless a profile of that name is registered already (idempotent; a project's own
    profile of that name is kept)."""
    from hypothesis import HealthCheck, settings
    from hypothesis.errors import InvalidArgument

    for name, values in PROFILES.items():
        try:
            settings.get_profile(name)
            continue  # ours from an earlier call, or the project's: never replaced
        except InvalidArgument:
            pass
        settings.register_profile(
            name,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            **values,  # type: ignore[arg-type]
        )


def former_name_line(name: str) -> str | None:
    """The usage error of ``--hypothesis-profile=NAME`` when ``NAME`` is one of the names
    the plugin's profiles had before and nothing registered it; None otherwise."""
    if name not in FORMER_NAMES:
        return None
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    try:
        settings.get_profile(name)
    except InvalidArgument:
        return (f"--hypothesis-profile={name}: no hypothesis profile {name!r} is registered; "
                f"pytest-gpucheck's is named {FORMER_NAMES[name]} (so that a project's own "
                f"{name!r} keeps its settings): use --hypothesis-profile={FORMER_NAMES[name]}")
    return None  # the project's (or hypothesis's own ci): it applies, as the user asked


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # tryfirst: hypothesis' own pytest_configure loads --hypothesis-profile, which
    # must already be registered by then (the project's conftest.py files, loaded before
    # any pytest_configure, registered theirs already).
    config.addinivalue_line("markers", MARKER)
    # Importing hypothesis costs ~0.1 s: register here only when the command
    # line names one of these profiles; the suites' conftest registers them
    # otherwise, so a plain ``pytest`` pays nothing.
    name = config.getoption("hypothesis_profile", None)
    if name in PROFILES:
        register_profiles()
    elif name in FORMER_NAMES:
        line = former_name_line(name)
        if line is not None:
            raise pytest.UsageError(line)


__all__ = ["CI_PROFILE", "DEV_PROFILE", "FORMER_NAMES", "MARKER", "PROFILES",
           "SANITIZE_DIVISOR", "examples_divisor", "former_name_line", "register_profiles",
           "use_sanitize_divisor"]
