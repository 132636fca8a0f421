"""The ``gpu_devices`` fixture and ``--gpu-host-devices``, run as a user runs them: a
project with its own test file (and conftest.py), ``pytest`` in a subprocess."""

from __future__ import annotations

import subprocess

import pytest
from user_runs import assert_lines, assert_no_line, assert_outcomes, run_pytest

pytestmark = pytest.mark.slow

#: The runs go without hypothesis's pytest plugin, which imports all of hypothesis at the
#: terminal summary (about 0.7 s of CPU a run) and has no part in the device counts.
LEAN = ("-p", "no:hypothesispytest")

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


def _run(pytester: pytest.Pytester, *args: str,
         extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    pytester.makepyfile(test_user=USER_TEST)
    return run_pytest(pytester.path, *LEAN, "-n0", "-rs", *args, timeout=600,
                      extra_env=extra_env)


@pytest.fixture(autouse=True)
def _no_inherited_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")
    monkeypatch.delenv("XLA_FLAGS", raising=False)


PLAIN_COUNT = """
import jax

def test_count():
    assert len(jax.devices()) == 4
"""


@pytest.fixture(scope="module")
def four_devices_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One run of the user's device tests and a plain JAX test on numpy and jax-cpu (each
    test below reads its own lines): its output, with every item's outcome (``-rA``)."""
    pytest.importorskip("jax")
    project = tmp_path_factory.mktemp("four_devices")
    (project / "test_user.py").write_text(USER_TEST, encoding="utf-8")
    (project / "test_plain.py").write_text(PLAIN_COUNT, encoding="utf-8")
    # COLUMNS: the plugin's lines are read whole.
    done = run_pytest(project, *LEAN, "-n0", "-rA", "--gpu-backends=numpy,jax-cpu",
                      timeout=900, extra_env={"COLUMNS": "250"})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "3 passed, 2 skipped in" in done.stdout, out
    return done.stdout


def test_jax_cpu_gets_four_host_devices_host_backends_skip(four_devices_run: str) -> None:
    # The run's 2 skips (its fixture checks the counts) are the numpy items.
    for name in ("test_four_devices", "test_two_devices"):
        assert f"PASSED test_user.py::{name}[jax-cpu]" in four_devices_run, four_devices_run
        assert f"PASSED test_user.py::{name}[numpy]" not in four_devices_run, four_devices_run
    assert "needs 4 devices of numpy, found 1: numpy runs on one host device" in (
        four_devices_run), four_devices_run


def test_jax_imported_by_a_conftest_first_is_skipped_with_the_reason(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import jax\n\njax.devices()  # starts JAX's backends\n")
    result = _run(pytester, "--gpu-backends=jax-cpu")
    assert_outcomes(result.stdout, skipped=2)
    assert_lines(result.stdout, ["*found 1: JAX started with*has not started yet, e.g. by a "
                                 "conftest.py that creates an array*"])


def test_a_users_own_flag_wins(pytester: pytest.Pytester) -> None:
    # The user's own XLA_FLAGS (which user_env does not inherit from this session).
    result = _run(pytester, "--gpu-backends=jax-cpu", "--gpu-host-devices=8",
                  extra_env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert_outcomes(result.stdout, passed=1, skipped=1)
    assert_lines(result.stdout, ["*needs 4 devices of jax-cpu, found 2*"])


def test_bad_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # In-process: the value is refused at configure, before any framework is imported.
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n0", "-rs",
                                "--gpu-host-devices=four")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-host-devices='four': the device count must be a whole "
                                 "number >= 1, e.g. --gpu-host-devices=4, or 0 to leave "
                                 "XLA_FLAGS alone*"])


PLAIN_JAX_TEST = """
import jax
import jax.numpy as jnp


def test_plain():
    assert jnp.ones(1).dtype == jnp.float32
    assert len(jax.devices()) == 1


def test_ours(gpu_backend):
    if gpu_backend.name == "jax-cpu":
        assert jnp.ones(1).dtype == jnp.float64  # our items run in 64-bit mode


def test_plain_after():
    assert jnp.ones(1).dtype == jnp.float32
"""


def test_a_plain_jax_test_keeps_jaxs_defaults(pytester: pytest.Pytester) -> None:
    """Selecting jax-cpu changes neither the 64-bit mode nor the device count of a test
    that does not run on our backends (issue 33); the header claims no change."""
    pytester.makepyfile(test_plain=PLAIN_JAX_TEST)
    result = run_pytest(pytester.path, *LEAN, "-n0", "--gpu-backends=numpy,jax-cpu",
                        timeout=600)
    assert_outcomes(result.stdout, passed=4)
    assert_no_line(result.stdout, "*XLA_FLAGS gets*")


def test_the_host_devices_are_set_for_the_whole_run_only_when_an_item_needs_them(
        four_devices_run: str) -> None:
    """Then they cannot be scoped (JAX reads XLA_FLAGS once), and one line says so; the
    plain test sees them, which is the documented cost."""
    assert "PASSED test_plain.py::test_count" in four_devices_run, four_devices_run
    assert ("gpucheck: XLA_FLAGS gets --xla_force_host_platform_device_count=4 for the whole "
            "run (2 selected item(s) need several jax-cpu devices; JAX reads it once per "
            "process; --gpu-host-devices=0 leaves XLA_FLAGS alone)\n") in four_devices_run, (
        four_devices_run)
