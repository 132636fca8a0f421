"""A third-party suite with its own ``xp`` (in the style of array-api-extra's conftest,
parametrized over numpy, array_api_strict, torch and jax) gives the same outcome, test by
test, with the plugin as without it (``-p no:gpucheck``), even with JAX selected."""

from __future__ import annotations

import re

import pytest
from user_runs import run_pytest

pytestmark = pytest.mark.slow

PEER_CONFTEST = '''"""A third-party suite's own ``xp``, in the style of array-api-extra's conftest:
an enum of array libraries, a ``library`` fixture parametrized over them that honours
its own ``skip_xp_backend`` / ``xfail_xp_backend`` markers, and an ``xp`` fixture that
hands out the standard's namespace of each.  It knows nothing of pytest-gpucheck."""

from __future__ import annotations

import enum

import pytest


class Backend(enum.Enum):
    NUMPY = "numpy"
    ARRAY_API_STRICT = "array_api_strict"
    TORCH = "torch"
    JAX = "jax.numpy"


def pytest_configure(config):
    config.addinivalue_line("markers", "skip_xp_backend(library, reason): skip on library")
    config.addinivalue_line("markers", "xfail_xp_backend(library, reason, strict): xfail on it")


@pytest.fixture(params=list(Backend), ids=lambda b: b.name.lower())
def library(request):
    backend = request.param
    for marker in request.node.iter_markers("skip_xp_backend"):
        if marker.args[0] is backend:
            pytest.skip(marker.kwargs.get("reason", "skip_xp_backend"))
    for marker in request.node.iter_markers("xfail_xp_backend"):
        if marker.args[0] is backend:
            request.applymarker(pytest.mark.xfail(reason=marker.kwargs.get("reason", ""),
                                                  strict=marker.kwargs.get("strict", True)))
    return backend


@pytest.fixture
def xp(library):
    module = pytest.importorskip(library.value)
    if library is Backend.ARRAY_API_STRICT or library is Backend.JAX:
        return module  # namespaces of their own
    import array_api_compat

    return array_api_compat.array_namespace(module.empty(0))
'''

PEER_TESTS = '''"""The peer's tests: standard names, dtype defaults, device counts, own marks."""

from __future__ import annotations

import pytest
from conftest import Backend


def test_permute_dims(xp):
    assert xp.permute_dims(xp.ones((2, 3)), (1, 0)).shape == (3, 2)


def test_cumulative_sum(xp):
    x = xp.asarray([1, 2, 3])
    assert xp.all(xp.cumulative_sum(x) == xp.asarray([1, 3, 6]))


def test_default_float_dtype(xp, library):
    """JAX's default is float32 unless 64-bit mode is on: a leaked jax_enable_x64 fails."""
    expected = xp.float32 if library in (Backend.JAX, Backend.TORCH) else xp.float64
    assert xp.ones(1).dtype == expected


OWN_NAMESPACES = {
    Backend.NUMPY: "array_api_compat.numpy",
    Backend.TORCH: "array_api_compat.torch",
    Backend.ARRAY_API_STRICT: "array_api_strict",
    Backend.JAX: "jax.numpy",
}


def test_own_xp_wins(xp, library):
    assert xp.__name__ == OWN_NAMESPACES[library]


def test_jax_device_count():
    """The process's own count: a leaked XLA_FLAGS host-device count fails."""
    jax = pytest.importorskip("jax")
    assert len(jax.devices()) == 1


@pytest.mark.skip_xp_backend(Backend.ARRAY_API_STRICT, reason="no fancy indexing")
def test_skipped_on_strict(xp):
    assert xp.asarray([1, 2])[xp.asarray([0])].shape == (1,)


@pytest.mark.xfail_xp_backend(Backend.TORCH, reason="torch has no uint64 max", strict=False)
def test_xfail_on_torch(xp):
    assert xp.iinfo(xp.uint64).max == 2**64 - 1
'''

#: The old side effect, as a plugin of its own: JAX's 64-bit mode for the whole run.
LEAKY_PLUGIN = """
def pytest_configure(config):
    import jax

    jax.config.update("jax_enable_x64", True)
"""

#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in what is checked here.
LEAN = ("-p", "no:hypothesispytest")
OUTCOME = re.compile(r"^(test_peer\.py::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")


def _outcomes(pytester: pytest.Pytester, *args: str) -> dict[str, str]:
    result = run_pytest(pytester.path, *LEAN, "-v", *args, timeout=600)
    found = {match[1]: match[2] for line in result.stdout.splitlines()
             if (match := OUTCOME.match(line))}
    assert found, result.stdout + result.stderr
    return found


@pytest.fixture
def peer(pytester: pytest.Pytester) -> pytest.Pytester:
    pytest.importorskip("array_api_compat")
    pytester.makeconftest(PEER_CONFTEST)
    pytester.makepyfile(test_peer=PEER_TESTS, leaky_plugin=LEAKY_PLUGIN)
    pytester.syspathinsert()
    return pytester


def test_a_peer_suite_has_the_same_outcomes_with_and_without_the_plugin(
    peer: pytest.Pytester,
) -> None:
    """Its own ``xp`` wins (``test_own_xp_wins``), JAX keeps its defaults and device
    count, its own skip / xfail marks act as before; and the broken twin, a plugin that
    leaks JAX's 64-bit mode into the run (what this plugin did before), changes the
    peer's dtype test on JAX, which the comparison names."""
    without = _outcomes(peer, "-p", "no:gpucheck")
    assert len(without) == 25
    assert "FAILED" not in without.values()
    with_plugin = _outcomes(peer, "--gpu-backends=numpy,jax-cpu,torch-cpu,array-api-strict")
    assert with_plugin == without
    pytest.importorskip("jax")
    leaky = _outcomes(peer, "-p", "leaky_plugin")
    changed = {test for test in without if leaky.get(test) != without[test]}
    assert changed == {"test_peer.py::test_default_float_dtype[jax]"}
