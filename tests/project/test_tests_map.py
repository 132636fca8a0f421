"""docs/architecture.md's map from the package's modules to their tests stays true: every
path it names exists, every folder of tests/ that holds tests is in it, and no test file
sits at the top of tests/ (where only the shared helpers and conftest.py live)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _map_rows() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where each module is tested", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    return table[2:]  # past the header and its rule


def test_every_path_the_map_names_exists() -> None:
    rows = _map_rows()
    assert len(rows) >= 5, "the map's table was not found"
    missing = []
    for row in rows:
        package, tests, first = (cell.strip() for cell in row.strip("|").split("|"))
        for name in re.findall(r"`([^`]+)`", package):
            if name.endswith("/") or name.endswith(".py"):
                base = REPO if name.startswith((".ci", "scripts", "docs", "noxfile")) \
                    or name in ("conformance/", "reference_kernels/") \
                    else REPO / "pytest_gpucheck"
                if not (base / name).exists():
                    missing.append(name)
        for name in re.findall(r"`([^`]+)`", tests + " " + first):
            if not (REPO / name).exists():
                missing.append(name)
    assert missing == []


def test_every_test_folder_is_in_the_map_and_none_is_left_at_the_top() -> None:
    named = {name for row in _map_rows()
             for name in re.findall(r"`tests/(\w+)/`", row.strip("|").split("|")[1])}
    folders = {path.parent.name for path in TESTS.glob("*/test_*.py")}
    assert folders - named == set(), "test folders the map does not name"
    assert named - folders == set(), "folders the map names that hold no tests"
    assert sorted(path.name for path in TESTS.glob("test_*.py")) == []


def test_test_file_names_are_unique_across_the_folders() -> None:
    """Without ``__init__.py`` files pytest imports each test file by its base name (its
    folder first on ``sys.path``): two files of one name would fail collection."""
    names = [path.name for path in TESTS.rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
