"""Loading the plugin imports no framework and costs no measurable time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from user_runs import assert_lines, run_command, run_pytest

pytestmark = pytest.mark.slow

FRAMEWORKS = ("numba", "cupy", "jax", "torch", "cuda", "mpi4py", "numpy")

PROBE = """
import json, sys

import pytest


class Collect:
    def pytest_sessionfinish(self):
        roots = sorted({name.split(".")[0] for name in sys.modules})
        print("MODULES=" + json.dumps(roots))


sys.exit(pytest.main(["--co", "-q", "-p", "no:cacheprovider", sys.argv[1]], plugins=[Collect()]))
"""


def test_collecting_a_plain_test_file_imports_no_framework(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_x():\n    assert 1 + 1 == 2\n")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    result = run_command([sys.executable, str(probe), str(tmp_path / "test_plain.py")],
                         tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("MODULES="))
    loaded = set(json.loads(line.removeprefix("MODULES=")))
    assert "pytest_gpucheck" in loaded, "the plugin was not loaded at all"
    assert not loaded & set(FRAMEWORKS), f"plugin load imported {sorted(loaded & set(FRAMEWORKS))}"


def test_plugin_is_registered_under_its_entry_point_name(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = run_pytest(pytester.path, "-p", "no:gpucheck", "--gpu-backends=all",
                        timeout=600)
    # With the plugin disabled, its options do not exist.
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert_lines(result.stderr, ["*unrecognized arguments: --gpu-backends=all*"])
