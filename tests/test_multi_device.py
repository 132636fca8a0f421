"""The ``gpu_devices`` fixture and ``--gpu-host-devices``, run as a user runs them: a
project with its own test file (and conftest.py), ``pytest`` in a subprocess."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

USER_TEST = """
import jax
import pytest


@pytest.mark.gpu_devices(4)
def test_four_devices(gpu_backend, gpu_devices):
    assert len(gpu_devices) >= 4
    x = jax.device_put(jax.numpy.arange(8.0), gpu_devices[3])
    assert next(iter(x.devices())) == gpu_devices[3]


def test_two_devices(gpu_backend, gpu_devices):
    assert len(gpu_devices) >= 2
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=USER_TEST)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n0", "-rs", *args)


@pytest.fixture(autouse=True)
def _no_inherited_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def test_jax_cpu_gets_four_host_devices_host_backends_skip(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--gpu-backends=numpy,jax-cpu")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*needs 4 devices of numpy, found 1: numpy runs on one host "
                                 "device*"])


def test_jax_imported_by_a_conftest_first_is_skipped_with_the_reason(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import jax\n")
    result = _run(pytester, "--gpu-backends=jax-cpu")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*found 1: JAX started with*not imported yet, e.g. by a "
                                 "conftest.py*"])


def test_a_users_own_flag_wins(pytester: pytest.Pytester,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    result = _run(pytester, "--gpu-backends=jax-cpu", "--gpu-host-devices=8")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs 4 devices of jax-cpu, found 2*"])


def test_bad_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # In-process: the value is refused at configure, before any framework is imported.
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n0", "-rs",
                                "--gpu-host-devices=four")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-host-devices='four': the device count must be a whole "
                                 "number >= 1, e.g. --gpu-host-devices=4, or 0 to leave "
                                 "XLA_FLAGS alone*"])
