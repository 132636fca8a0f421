"""A plugin the user turns off stays off in the plugin's child processes.

``pytest -p no:NAME`` (or the same in addopts) removes a plugin from the user's run;
the isolation workers and the simulator child run the user's items, so they must run
them without it too.  The broken version (every ``no:`` left out of the child's command
line) had the plugin back in every child.
"""

from __future__ import annotations

import importlib.util

import pytest
from user_runs import assert_outcomes, run_pytest

pytestmark = pytest.mark.slow

TEST = """
    import os


    def test_the_plugin_is_off_here(request, gpu_backend):
        assert os.environ.get("PYTEST_GPUCHECK_REPORT_SINK"), "not run in a child process"
        assert not request.config.pluginmanager.has_plugin("hypothesispytest")
    """


@pytest.mark.parametrize("where", [
    pytest.param(["--gpu-backends=numpy", "--gpu-isolate=test"], id="isolation-worker"),
    pytest.param(["--gpu-backends=numba-cudasim"], id="simulator-child"),
])
@pytest.mark.parametrize("how", ["command-line", "addopts"])
def test_a_plugin_turned_off_is_off_in_the_child(pytester: pytest.Pytester, where: list[str],
                                                 how: str) -> None:
    # Not imported here: pytester puts sys.modules back after each test, and numba.cuda
    # imported twice in one process fails on its own registry.
    if "--gpu-backends=numba-cudasim" in where and importlib.util.find_spec("numba") is None:
        pytest.skip("numba is not installed")
    pytester.makepyfile(test_child=TEST)
    off = ["-p", "no:hypothesispytest"]
    if how == "addopts":
        pytester.makeini(f"[pytest]\naddopts = {' '.join(off)}\n")
        off = []
    result = run_pytest(pytester.path, "-n0", *off, *where, timeout=600)
    assert_outcomes(result.stdout, passed=1)
