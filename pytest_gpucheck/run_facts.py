"""When and on what the run was made, for the report (``Matrix.run``): the UTC time,
the commit under test, the host and the versions.

A core module, not part of ``reporting/``: the commit may take a short ``git``
command, which starts through the process layer, and the process layer reports
through ``reporting/`` (a cycle between the two otherwise).
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import Any

import pytest


def run_facts(rootpath: Path) -> dict[str, Any]:
    """When and on what the run was made: UTC timestamp, commit, host, versions."""
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": current_commit(rootpath),
        "host": platform.node(),
        "platform": platform.platform(),
        "versions": {
            "python": platform.python_version(),
            "pytest": pytest.__version__,
            "pytest-gpucheck": version("pytest-gpucheck"),
        },
    }


def current_commit(rootpath: Path) -> str:
    """The commit under test: the CI's variable (GitHub, GitLab), else ``git``, else ""."""
    for variable in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        if os.environ.get(variable):
            return os.environ[variable]
    from pytest_gpucheck.processes import run_command

    done = run_command(["git", "rev-parse", "HEAD"], cwd=rootpath, timeout=10)
    if isinstance(done, str):  # no git, or it hung
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
