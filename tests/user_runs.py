"""Running a temporary project the way a user does (``python -m pytest`` in a subprocess)
and reading its JUnit file: shared by the tests whose scenarios end in real crashes."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def run_pytest(project: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``project``, as a user runs it: without the variables
    this test session's plugin set for its own children (``PYTEST_*``, the simulator
    switch), which would make the user's run a child of ours."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "NUMBA_ENABLE_CUDASIM"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=project, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def junit_outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """test name -> (passed / failed / error / skipped, message text) from a JUnit file;
    a test reported twice fails (each item gets exactly one outcome)."""
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        assert name not in outcomes, f"{name} reported twice"
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, text = child.tag, (child.get("message") or "") + (child.text or "")
                break
        outcomes[name] = (outcome, text)
    return outcomes
