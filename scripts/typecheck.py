"""Type-check the plugin, the bundled suites and the references under their installed names.

Run from anywhere (CI runs it; extra arguments go to mypy)::

    python scripts/typecheck.py

The repository keeps ``conformance/`` and ``reference_kernels/`` at its top
level, but they install as ``pytest_gpucheck.conformance`` and
``pytest_gpucheck.reference_kernels`` (``pyproject.toml``'s ``package-dir``).
mypy cannot see that mapping (setuptools' editable finder is an import hook,
which mypy never runs), and with ``ignore_missing_imports`` an unresolved
``pytest_gpucheck.conformance...`` import would silently become ``Any``.  So
this script stages the installed layout under ``build/typecheck/`` (a
``pytest_gpucheck`` folder of symbolic links to the plugin's files plus
``conformance`` and ``reference_kernels``) and runs mypy there, with the
project's configuration.  Messages name the repository's files again.
Exit status: mypy's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_gpucheck"
#: Installed name (under the plugin's package) -> the repository folder it comes from.
MAPPED = {"conformance": "conformance", "reference_kernels": "reference_kernels"}


def stage(where: Path) -> Path:
    """Build ``where/pytest_gpucheck`` as the installed package looks; return ``where``."""
    if where.exists():
        shutil.rmtree(where)
    package = where / PACKAGE
    package.mkdir(parents=True)
    for entry in sorted((ROOT / PACKAGE).iterdir()):
        if entry.name == "__pycache__" or entry.name in MAPPED:
            continue
        (package / entry.name).symlink_to(entry)
    for name, folder in MAPPED.items():
        (package / name).symlink_to(ROOT / folder, target_is_directory=True)
    return where


def main(argv: list[str]) -> int:
    where = stage(ROOT / "build" / "typecheck")
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache" / "typecheck"), *argv, PACKAGE]
    done = subprocess.run(command, cwd=where, capture_output=True, text=True, check=False)
    prefixes = {f"{PACKAGE}{os.sep}{name}{os.sep}": f"{folder}{os.sep}"
                for name, folder in MAPPED.items()}
    for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
        for line in text.splitlines():
            for staged, real in prefixes.items():
                if line.startswith(staged):
                    line = real + line[len(staged):]
                    break
            print(line, file=stream)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
