"""Proof that the ufunc, transforms (jit against eager included), multi-device, grid-sync
and fused-kernel checks work.

A fresh project gets ``tests/broken_field_implementations.py`` as its
``conftest.py`` (and the cooperative kernels module beside it) and runs the
bundled suites as a user does, ``pytest --gpu-conformance --gpu-impls=user``,
once on the host backends and once on the simulator.  Each test below then
asserts that one broken implementation failed with the message of the check
that exists to catch its bug, or that its correct twin passed.
"""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from user_runs import run_command

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
SUITES = "test_ufuncs or test_gufunc or test_grad or test_vmap or test_sharded or grid_sync"
#: The fused row and jit against eager, in a run of their own (each run stays well inside
#: its time limit on a loaded machine).
JIT_SUITES = "test_fused or test_eager or test_sigmoid or test_heat_steps_1d"


def _run(project: Path, backends: str, suites: str = SUITES,
         **extra_env: str) -> dict[str, tuple[str, str]]:
    junit = project / f"junit-{backends.replace(',', '-')}-{len(suites)}.xml"
    command = [sys.executable, "-m", "pytest", "--gpu-conformance", "--gpu-impls=user",
               f"--gpu-backends={backends}", "--hypothesis-profile=proof", "-p",
               "no:cacheprovider", "-q", "-n0", "-k", suites, f"--junitxml={junit}"]
    process = run_command(command, project, timeout=1200, extra_env=extra_env)
    assert junit.exists(), process.stdout[-3000:] + process.stderr[-3000:]
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).iter("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        if failure is not None:
            outcomes[case.get("name", "")] = ("failed", f"{failure.get('message')}\n"
                                                        f"{failure.text}")
        elif error is not None:
            outcomes[case.get("name", "")] = ("error", f"{error.text}")
        elif case.find("skipped") is not None:
            outcomes[case.get("name", "")] = ("skipped", "")
        else:
            outcomes[case.get("name", "")] = ("passed", "")
    return outcomes


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    pytest.importorskip("numba")
    pytest.importorskip("jax")
    pytest.importorskip("torch")
    project = tmp_path_factory.mktemp("field-user-project")
    shutil.copy(TESTS / "broken_field_implementations.py", project / "conftest.py")
    host = {**_run(project, "numba-cpu,jax-cpu,torch-cpu"),
            **_run(project, "jax-cpu", JIT_SUITES)}
    # The simulator child does not load a conftest.py of the rootdir for suites outside
    # it (--gpu-conformance): the same module goes in as a plugin for that run.
    simulated = tmp_path_factory.mktemp("field-user-plugin")
    shutil.copy(TESTS / "broken_field_implementations.py", simulated / "field_user_impls.py")
    shutil.copy(TESTS / "grid_sync_user_kernels.py", simulated / "grid_sync_user_kernels.py")
    return {**host, **_run(simulated, "numba-cudasim", PYTHONPATH=str(simulated),
                           PYTEST_PLUGINS="field_user_impls")}


#: test id -> a fragment of the message of the check that catches the bug.
REJECTED = {
    "test_ufunc_saxpy[numba-cpu:broken_output_dtype]": "out.dtype=float64, but should be float32",
    "test_gufunc_laplacian_2d[numba-cpu:broken_core_layout]": "five-point Laplacian per slice",
    "test_vmap_saxpy[jax-cpu:broken_in_axes]": "raised ValueError: vmap got inconsistent sizes",
    "test_grad_sigmoid[jax-cpu:broken_sign]": "max(s, 1 - s)",
    "test_grad_heat_step_1d[torch-cpu:broken_missing_term]": "H^T g of the heat step",
    "test_sharded_sum[jax-cpu:broken_psum_axis]": "rule: exact",
    "test_sharded_heat_step_1d[jax-cpu:broken_ppermute_direction]": "heat step",
    "test_heat_steps_grid_sync[numba-cudasim:broken_block_sync]": "steps x gamma_7",
    "test_heat_steps_grid_sync[numba-cudasim:broken_too_many_blocks]":
        "the CUDA simulator runs one block at a time and cannot synchronise blocks",
    # The finite-difference checks catch the same gradient bugs without an analytic gradient.
    "test_grad_sigmoid_finite_differences[jax-cpu:broken_sign]":
        "but the central difference gives",
    "test_grad_heat_step_1d_finite_differences[torch-cpu:broken_missing_term]":
        "but the central difference gives",
    # Fused kernels (a user's own, jitted so that XLA fuses them) meet the unfused contract.
    # Caught first by the relevance check of alpha (issue 41), which runs before the sweep.
    "test_fused_saxpy[jax-cpu:broken_drops_alpha]": "alpha is ignored: out came out bit for bit",
    "test_fused_sum_of_squares[jax-cpu:broken_forgets_square]":
        "rule: exact (integer-valued float64 sum_of_squares",
    # jax.jit against eager execution, each side caught where it is wrong: a NumPy fast
    # path for concrete arrays only runs eagerly (the jitted sigmoid passes, below) ...
    "test_eager_matches_the_contract_too[jax-cpu-sigmoid]":
        "out.dtype=float64, but should be float32 [sigmoid(",
    # ... and a global read at trace time leaves the jitted function a stale value (run
    # eagerly it is right: the eager check of heat_steps_1d passes, below).  The relevance
    # check of alpha names it: every later alpha gives the first one's result.
    "test_heat_steps_1d[jax-cpu:broken_stale_global]": "alpha is ignored: out came out bit for bit",
}

ACCEPTED = [
    "test_ufunc_saxpy[numba-cpu:good]",
    "test_gufunc_laplacian_2d[numba-cpu:good]",
    "test_vmap_saxpy[jax-cpu:good]",
    "test_grad_sigmoid[jax-cpu:good]",
    "test_grad_heat_step_1d[torch-cpu:good]",
    "test_sharded_sum[jax-cpu:good]",
    "test_sharded_heat_step_1d[jax-cpu:good]",
    "test_heat_steps_grid_sync[numba-cudasim:good]",
    "test_grad_sigmoid_finite_differences[jax-cpu:good]",
    "test_grad_heat_step_1d_finite_differences[torch-cpu:good]",
    "test_fused_saxpy[jax-cpu:good]",
    "test_fused_sum_of_squares[jax-cpu:good]",
    "test_heat_steps_1d[jax-cpu:good]",
    # The jitted side of the eager-only bug, and the eager side of the trace-time one.
    "test_sigmoid[jax-cpu:broken_concrete_fast_path]",
    "test_eager_matches_the_contract_too[jax-cpu-heat_steps_1d]",
]


def test_the_eager_failure_names_the_eager_run(suite_run: dict[str, tuple[str, str]]) -> None:
    """The jit-vs-eager check says which run was wrong: the implementation run eagerly."""
    _, message = suite_run["test_eager_matches_the_contract_too[jax-cpu-sigmoid]"]
    assert "on jax-cpu:broken_concrete_fast_path-eager]" in message


@pytest.mark.parametrize(("test_id", "fragment"), sorted(REJECTED.items()))
def test_broken_implementation_is_rejected(suite_run: dict[str, tuple[str, str]], test_id: str,
                                           fragment: str) -> None:
    outcome, message = suite_run.get(test_id, ("did not run", str(sorted(suite_run))))
    assert outcome == "failed", f"{test_id}: {outcome}\n{message[:3000]}"
    assert fragment in message, message[:3000]


@pytest.mark.parametrize("test_id", ACCEPTED)
def test_correct_twin_passes(suite_run: dict[str, tuple[str, str]], test_id: str) -> None:
    outcome, message = suite_run.get(test_id, ("did not run", str(sorted(suite_run))))
    assert outcome == "passed", f"{test_id}: {outcome}\n{message[:3000]}"
