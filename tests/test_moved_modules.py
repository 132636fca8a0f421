"""The modules that moved into folders by role keep their old import names, with a
DeprecationWarning naming the new one (issue: a top level that reads like the
architecture)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pytest_gpucheck import MOVED_MODULES


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_an_old_module_name_still_imports_the_moved_module(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    try:
        with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}; import it from there"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
    finally:
        sys.modules.pop(old, None)


def test_from_the_package_import_a_moved_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from pytest_gpucheck import tolerance``, the form docs/assertions.md once printed."""
    import pytest_gpucheck

    sys.modules.pop("pytest_gpucheck.tolerance", None)
    # An earlier import of the old name left it as an attribute of the package.
    monkeypatch.delattr(pytest_gpucheck, "tolerance", raising=False)
    try:
        with pytest.warns(DeprecationWarning, match="pytest_gpucheck.checking.tolerance"):
            from pytest_gpucheck import tolerance
        from pytest_gpucheck.checking import tolerance as moved

        assert tolerance is moved
    finally:
        sys.modules.pop("pytest_gpucheck.tolerance", None)


def test_the_top_level_holds_the_plugins_face_only() -> None:
    """At most 12 files directly in the package: the rest lives in folders by role."""
    import pytest_gpucheck

    files = sorted(p.name for p in Path(pytest_gpucheck.__file__).parent.iterdir() if p.is_file())
    assert len(files) <= 12, files


def test_the_package_imports_no_moved_name() -> None:
    """The plugin's own code imports every module by its new name: an old one warned in
    the run of every user whose benchmark failed the gate (bench/plugin.py imported
    ``pytest_gpucheck.ci`` for the rerun line: a DeprecationWarning in the warnings
    summary of a user who never used the old name)."""
    import ast

    import pytest_gpucheck

    root = Path(pytest_gpucheck.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            found += [f"{path.relative_to(root)}:{node.lineno} {name}"
                      for name in names if name in MOVED_MODULES]
    assert found == []
