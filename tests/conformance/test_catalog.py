"""The kernel catalog: one entry per kernel, read by every checker of it.

* ``reference_kernels`` (catalog included) imports nothing but NumPy;
* every entry names a tolerance rule that exists, and the suites' specs are
  the catalog's kernels;
* the heat step has one tolerance: the direct checks of the bundled
  implementations and the MPI check apply the rule the suites apply, which
  rejects an error the old ``32 * eps`` (direct) bound let through;
* adding a kernel takes its catalog entry and its implementations: a
  temporary project adds a toy kernel from its ``conftest.py`` and runs the
  documented command on every CPU-tier backend; a broken twin fails with the
  value check's message, and the failures' rerun commands (the harness's line
  and the core's rule, one rule) rerun them verbatim.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bundled_impl_checks import Problem, assert_matches
from user_runs import numba_elementwise, run_command, run_pytest

from pytest_gpucheck.checking.kernel_rules import RULES, tolerance_of
from pytest_gpucheck.conformance.specs import SPECS, spec_for
from pytest_gpucheck.reference_kernels import CATALOG, KERNELS
from pytest_gpucheck.reference_kernels.catalog import BUNDLED, VARIANTS
from pytest_gpucheck.registry import CONTRACTS, IN_PLACE


def test_reference_kernels_import_only_numpy() -> None:
    # Importing pytest_gpucheck.reference_kernels runs the plugin package's __init__, which
    # imports its public API lazily: no other module of the plugin may load.
    code = ("import sys, pytest_gpucheck.reference_kernels\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'pytest', 'hypothesis', 'conformance', 'numba', 'jax', 'torch', 'cupy'}"
            " | {m for m in sys.modules if m.startswith('pytest_gpucheck.')"
            " and not m.startswith('pytest_gpucheck.reference_kernels')}))")
    found = run_command([sys.executable, "-c", code], Path(__file__).parents[2], timeout=None)
    found.check_returncode()
    assert found.stdout.strip() == "[]"


def test_every_entry_names_a_rule_and_every_rule_is_named() -> None:
    # The contract variants (nansum ...) enter the catalog when an implementation of one is
    # registered; their rules are named by their entries all the same.
    named = {entry.tolerance for entry in (*CATALOG.values(), *VARIANTS.values())}
    assert named <= set(RULES), named - set(RULES)
    assert set(RULES) <= named, set(RULES) - named


def test_the_suites_and_registration_read_the_catalog() -> None:
    assert set(SPECS) == set(BUNDLED) <= set(CATALOG)
    for name, entry in CATALOG.items():
        spec = spec_for(name)
        assert spec.entry is entry
        assert (spec.arguments, spec.in_place, spec.size_arguments) == (
            entry.arguments, entry.in_place, entry.sizes)
        assert CONTRACTS[name].inputs == entry.arguments
        assert (name in IN_PLACE) == (entry.in_place is not None)
        assert KERNELS[name] is entry.reference


def _heat_problem() -> Problem:
    u = np.linspace(-1.0, 1.0, 33, dtype=np.float32)
    alpha = np.float32(0.25)
    return Problem("heat_step_1d", {"u": u, "alpha": alpha}, KERNELS["heat_step_1d"](u, alpha),
                   exact=False)


def test_direct_checks_apply_the_heat_rule_and_catch_what_32_eps_let_through() -> None:
    problem = _heat_problem()
    expected = problem.expected
    assert_matches(problem, expected.copy(), "reference")
    # 16 eps * max|u| at one interior cell: inside the old 32 eps bound, outside the
    # derived one (gamma_7 * (1 + 4 alpha) * max|u| is about 7 eps * max|u| here).
    off = expected.copy()
    off[16] += np.float32(16 * np.finfo(np.float32).eps)
    with pytest.raises(AssertionError, match=r"1 of 33 elements off, first at \[16\]"):
        assert_matches(problem, off, "off by 16 eps")


def test_the_mpi_heat_check_applies_the_same_rule() -> None:
    from pytest_gpucheck.mpi.checks import _compare

    u = np.linspace(-1.0, 1.0, 33)
    expected = KERNELS["heat_steps_1d"](u, 0.25, 2)
    rule = tolerance_of("heat_steps_1d", {"u": u, "alpha": 0.25, "steps": 2}, expected)
    assert rule.reason.startswith("2 steps x gamma_7")
    assert _compare(expected.copy(), expected, str, rule) is None
    off = expected.copy()
    off[5] += 2 * float(np.max(rule.bound))
    assert "1 of 33 cells wrong" in str(_compare(off, expected, lambda i: f"cell {i[0]}", rule))


# -- adding a kernel ----------------------------------------------------------------------------

TOY_CONFTEST = '''
import numpy as np
import pytest_gpucheck
from numba import cuda, njit
from pytest_gpucheck.reference_kernels.catalog import FLOATS, Entry, add


def double_add(x, y):
    """``2 x + y``: one rounding (the doubling is exact)."""
    return np.add(np.multiply(x, x.dtype.type(2)), y)


add(Entry("double_add", "toy", double_add, ("x", "y"), FLOATS, "correctly_rounded"))


@pytest_gpucheck.implements("double_add", backend="numpy", name="mine")
def double_add_numpy(x, y, out):
    out[...] = 2 * x + y


@pytest_gpucheck.implements("double_add", backend="numpy", name="broken")
def double_add_broken(x, y, out):
    out[...] = 2 * x - y  # wrong on purpose

''' + numba_elementwise("double_add", "x, y", "2 * x[i] + y[i]") + '''


@pytest_gpucheck.implements("double_add", backend="jax-cpu", name="mine")
def double_add_jax(x, y):
    return 2 * x + y


@pytest_gpucheck.implements("double_add", backend="jax-cpu", name="takes_out")
def double_add_jax_out(x, y, out):  # JAX arrays are immutable: refused before any launch
    return 2 * x + y


@pytest_gpucheck.implements("double_add", backend="torch-cpu", name="mine")
def double_add_torch(x, y):
    return 2 * x + y
'''

CPU_TIER = ("numpy", "numba-cpu", "numba-cudasim", "jax-cpu", "torch-cpu")


def _run(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return run_pytest(project, *args, timeout=1200)


@pytest.mark.slow
def test_a_kernel_added_through_the_catalog_is_checked_like_a_bundled_one(
        tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(TOY_CONFTEST)
    result = _run(tmp_path, ["--gpu-conformance", "--gpu-impls=user",
                             f"--gpu-backends={','.join(CPU_TIER)}", "--gpu-report=report.json",
                             "-rA"])
    out = result.stdout
    assert result.returncode == 1, out[-4000:]
    for backend in CPU_TIER:
        assert re.search(rf"PASSED \S*test_catalog_kernels.py::test_double_add\[{backend}:mine\]",
                         out), (backend, out[-4000:])
    assert re.search(r"\b2 failed, 5 passed\b", out), out[-4000:]
    # The broken twin fails the value check (with its message); the out-taking JAX callable
    # fails the immutability check, which prints no rerun line of its own.
    assert re.search(r"out\[\d+\]=\S+, but should be", out), out[-4000:]
    assert "arrays are immutable: return the result instead" in out

    report = json.loads((tmp_path / "report.json").read_text())
    failures = {failure["nodeid"].rsplit("::", 1)[-1]: failure["rerun"]
                for failure in report["failures"]}
    assert set(failures) == {"test_double_add[numpy:broken]",
                             "test_double_add[jax-cpu:takes_out]"}
    for name, command in failures.items():
        args = shlex.split(command)
        # One rule for both: the harness's rerun line and the core's selector for a
        # failure without one select the suite item by its full name.
        assert args[:3] == ["pytest", "-k", name], command
        again = _run(tmp_path, args[1:])
        assert again.returncode == 1, again.stdout[-3000:]
        assert re.search(r"\b1 failed\b", again.stdout), again.stdout[-3000:]
