"""Imports only point down the layers; no subpackages import each other (scripts/check_layers.py).

The check reads the tree, so it holds for modules added or moved later; each
rule is proved on a small tree built to break it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from user_runs import run_command

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "scripts" / "check_layers.py"


def _check(root: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [] if root is None else ["--root", str(root)]
    return run_command([sys.executable, str(SCRIPT), *args], REPO, timeout=120)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for package in ("conformance", "pytest_gpucheck", "pytest_gpucheck/backends",
                    "pytest_gpucheck/mpi", "pytest_gpucheck/processes", "reference_kernels"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("", encoding="utf-8")
    for name, code in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code, encoding="utf-8")
    return root


def test_this_tree_only_points_down() -> None:
    result = _check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "layers ok" in result.stdout


#: A folder's bare name, spelled apart so that import rewrites leave these cases alone.
FOLDER = "reference_kernels"

CLEAN = {
    "conformance/test_x.py": "from pytest_gpucheck import core, reference_kernels\n",
    "pytest_gpucheck/core.py": "from .backends import numpy_backend\n",
    "pytest_gpucheck/devices.py": "import os\n",
    "pytest_gpucheck/backends/numpy_backend.py": (
        "from ..devices import os\nfrom pytest_gpucheck.reference_kernels import x\n"),
    "pytest_gpucheck/mpi/checks.py": "from ..core import x\nfrom ..backends import y\n",
    # The process layer's face and insides: the rest imports the face, the insides
    # import each other.
    "pytest_gpucheck/mpi/spawn.py": "from ..processes import run_child_pytest\n",
    "pytest_gpucheck/processes/__init__.py": "from .controller import run_child_pytest\n",
    "pytest_gpucheck/processes/controller.py": (
        "from .guard import os\nimport subprocess\n\n\ndef start():\n"
        "    return subprocess.Popen(['true'])\n"),
    # A socket's framing starts nothing; a module and a function at their limits pass.
    "pytest_gpucheck/wire_user.py": "from multiprocessing.connection import Connection\n",
    "pytest_gpucheck/at_limits.py": "def f():\n" + "    x = 1\n" * 79 + "\n" * 520,
    "pytest_gpucheck/processes/guard.py": "import os\n",
    "reference_kernels/x.py": "import numpy\n",
}


@pytest.mark.parametrize(("name", "files", "message"), [
    ("core imports the suites (lazily)", {"pytest_gpucheck/core.py":
        "def f():\n    import pytest_gpucheck.conformance.test_x\n"},
     "core -> pytest_gpucheck.conformance.test_x imports up"),
    ("core imports the suites by name", {"pytest_gpucheck/core.py":
        "import importlib\nimportlib.import_module('pytest_gpucheck.conformance')\n"},
     "-> pytest_gpucheck.conformance imports up"),
    ("reference imports the plugin", {"reference_kernels/x.py":
        "from pytest_gpucheck import core\n"},
     "pytest_gpucheck.reference_kernels.x -> pytest_gpucheck.core"),
    ("a suite imports a folder's bare name", {"conformance/test_x.py":
        "from reference_kernels import x\n"},
     "imports reference_kernels by its folder name; import pytest_gpucheck.reference_kernels"),
    ("a module imports a folder's bare name by string", {"pytest_gpucheck/core.py":
        f"import importlib\nimportlib.import_module('{FOLDER}.x')\n"},
     f"imports {FOLDER}.x by its folder name"),
    ("a suite file imports relatively", {"conformance/test_x.py":
        "from .harness import y\n", "conformance/harness.py": "y = 1\n"},
     "relative import in a suite file pytest imports by its path"),
    ("backend imports a feature", {"pytest_gpucheck/backends/numpy_backend.py":
        "from ..mpi import checks\n"}, "-> pytest_gpucheck.mpi.checks imports up"),
    ("a feature reaches inside the process layer", {"pytest_gpucheck/mpi/spawn.py":
        "from ..processes.controller import run_child_pytest\n"},
     "pytest_gpucheck.mpi.spawn -> pytest_gpucheck.processes.controller reaches inside "
     "pytest_gpucheck.processes; import it from pytest_gpucheck.processes"),
    ("a core module reaches inside the process layer lazily, by name",
     {"pytest_gpucheck/core.py": "import importlib\n"
      "def f():\n    importlib.import_module('pytest_gpucheck.processes.guard')\n"},
     "pytest_gpucheck.core -> pytest_gpucheck.processes.guard reaches inside"),
    ("core and a subpackage import each other", {"pytest_gpucheck/devices.py":
        "from .mpi.checks import x\n"}, "import cycle: "),
    ("a module outside the process layer runs a command", {"pytest_gpucheck/core.py":
        "import subprocess\nsubprocess.run(['git', 'rev-parse', 'HEAD'])\n"},
     "pytest_gpucheck/core.py:2: subprocess.run starts a process outside the process layer"),
    ("a feature starts a child under another name", {"pytest_gpucheck/mpi/checks.py":
        "import subprocess as sp\n\n\ndef f():\n    return sp.Popen(['x'])\n"},
     "pytest_gpucheck/mpi/checks.py:5: subprocess.Popen starts a process outside"),
    ("a core module forks", {"pytest_gpucheck/core.py": "import os\npid = os.fork()\n"},
     "os.fork starts a process outside the process layer"),
    ("a core module imports multiprocessing's processes", {"pytest_gpucheck/core.py":
        "from multiprocessing import Process\n"}, "multiprocessing.Process starts a process"),
    ("a module over 600 lines", {"pytest_gpucheck/at_limits.py": "x = 1\n" * 601},
     "pytest_gpucheck/at_limits.py: 601 lines, over 600; split it by role"),
    ("a function over 80 lines", {"pytest_gpucheck/at_limits.py":
        "def f():\n" + "    x = 1\n" * 80},
     "pytest_gpucheck/at_limits.py:1: f is 81 lines, over 80; split it into steps"),
])
def test_a_tree_that_breaks_a_rule_is_rejected(tmp_path: Path, name: str,
                                               files: dict[str, str], message: str) -> None:
    clean = _check(_tree(tmp_path / "clean", CLEAN))
    assert clean.returncode == 0, clean.stdout  # the twin without the bad import passes
    result = _check(_tree(tmp_path / "broken", {**CLEAN, **files}))
    assert result.returncode == 1, result.stdout
    assert message in result.stdout, result.stdout


def test_the_process_layer_face_hands_on_every_name_it_lists_without_loading_the_rest() -> None:
    """Every name of ``pytest_gpucheck.processes``' face resolves to its module, and
    importing the face loads none of the child-process machinery (names are imported on
    first use, so loading the plugin stays cheap)."""
    code = (
        "import sys, pytest_gpucheck.processes as face\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('pytest_gpucheck.processes.')"
        " and m != 'pytest_gpucheck.processes.sticky_errors')\n"
        "assert not loaded, loaded\n"
        "assert sorted(face.__all__) == sorted({*face._FACE, 'inject_sticky_error'}), "
        "'__all__ and _FACE differ'\n"
        "import importlib\n"
        "for name, module in face._FACE.items():\n"
        "    inside = importlib.import_module(f'pytest_gpucheck.processes.{module}')\n"
        "    assert getattr(face, name) is getattr(inside, name), name\n"
        "print('face ok', len(face.__all__))\n")
    result = run_command([sys.executable, "-c", code], REPO, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "face ok" in result.stdout


#: A tree of modules (the layers' folders) for the module cycle and backend rules.
MODULES_CLEAN = {
    "pytest_gpucheck/backends/base.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_gpucheck.backends.timing import Timer\n"
        "def event_timer():\n    from pytest_gpucheck.backends.timing import Timer\n"),
    # The timer names the protocol's type for the type checker only: no cycle.
    "pytest_gpucheck/backends/timing.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_gpucheck.backends.base import Backend\n"),
    "pytest_gpucheck/backends/shared_ops.py": "import os\n",
    "pytest_gpucheck/backends/numba/backend.py": "from ..shared_ops import os\n",
    "pytest_gpucheck/backends/cuda_python/backend.py": (
        "from pytest_gpucheck.backends.shared_ops import os\n"),
}


@pytest.mark.parametrize(("name", "files", "message"), [
    ("two modules of one subpackage import each other (one lazily)",
     {"pytest_gpucheck/backends/timing.py":
      "def f():\n    from pytest_gpucheck.backends.base import Backend\n"},
     "module import cycle: pytest_gpucheck.backends.base -> pytest_gpucheck.backends.timing "
     "-> pytest_gpucheck.backends.base"),
    ("a circle of three modules",
     {"pytest_gpucheck/backends/timing.py": "from pytest_gpucheck.backends import shared_ops\n",
      "pytest_gpucheck/backends/shared_ops.py": "import pytest_gpucheck.backends.base\n"},
     "module import cycle: pytest_gpucheck.backends.base -> pytest_gpucheck.backends.timing "
     "-> pytest_gpucheck.backends.shared_ops -> pytest_gpucheck.backends.base"),
    ("a backend imports another (lazily)",
     {"pytest_gpucheck/backends/cuda_python/backend.py":
      "def ops():\n    from pytest_gpucheck.backends.numba.backend import NumbaOps\n"},
     "pytest_gpucheck.backends.cuda_python.backend -> pytest_gpucheck.backends.numba.backend: "
     "the cuda_python backend imports the numba backend"),
    ("a backend imports another for its types only",
     {"pytest_gpucheck/backends/numba/backend.py": "from typing import TYPE_CHECKING\n"
      "if TYPE_CHECKING:\n    from ..cuda_python.backend import DeviceArray\n"},
     "the numba backend imports the cuda_python backend"),
])
def test_module_cycles_and_backends_importing_backends_are_rejected(
        tmp_path: Path, name: str, files: dict[str, str], message: str) -> None:
    """The module-level rules: no two modules import each other (imports under
    ``if TYPE_CHECKING:`` exempt: they never run), and no framework folder under
    ``backends/`` (one with a ``backend.py``) imports another's; the clean twin passes."""
    def tree(root: Path, overrides: dict[str, str]) -> Path:
        _tree(root, {})
        for folder in ("numba", "cuda_python"):
            (root / "pytest_gpucheck/backends" / folder).mkdir()
            (root / "pytest_gpucheck/backends" / folder / "__init__.py").write_text("")
        for file, code in {**MODULES_CLEAN, **overrides}.items():
            (root / file).write_text(code, encoding="utf-8")
        return root

    clean = _check(tree(tmp_path / "clean", {}))
    assert clean.returncode == 0, clean.stdout
    result = _check(tree(tmp_path / "broken", files))
    assert result.returncode == 1, result.stdout
    assert message in result.stdout, result.stdout


#: The process layer's two sides: the worker side and the modules both sides share import
#: only each other; the controller side imports them all.
SIDES = {
    **CLEAN,
    "pytest_gpucheck/processes/__init__.py": (
        "from .batch import run_child_pytest\nfrom .worker import install_report_sink\n"),
    "pytest_gpucheck/processes/batch.py": "from .wire import ChildRun\nfrom .guard import os\n",
    "pytest_gpucheck/processes/wire.py": "import json\n",
    "pytest_gpucheck/processes/worker.py": (
        "from .wire import ChildRun\n"
        "from pytest_gpucheck.processes.guard import os\n"
        "def f():\n    from pytest_gpucheck.processes import sticky_errors\n"),
    "pytest_gpucheck/processes/sticky_errors.py": "import os\n",
}


@pytest.mark.parametrize(("name", "files", "message"), [
    ("the worker imports the controller side", {"pytest_gpucheck/processes/worker.py":
        "from .batch import run_child_pytest\n"},
     "pytest_gpucheck.processes.worker -> pytest_gpucheck.processes.batch: the worker side "
     "imports the controller side"),
    ("the worker imports the face lazily", {"pytest_gpucheck/processes/worker.py":
        "def f():\n    from pytest_gpucheck.processes import run_child_pytest\n"},
     "pytest_gpucheck.processes.worker -> pytest_gpucheck.processes: the worker side "
     "imports the controller side"),
    ("the wire imports the controller side", {"pytest_gpucheck/processes/wire.py":
        "from .batch import run_child_pytest\n"},
     "pytest_gpucheck.processes.wire -> pytest_gpucheck.processes.batch: a module both "
     "sides share imports the controller side"),
    ("the controller side imports the worker side", {"pytest_gpucheck/processes/batch.py":
        "from .worker import SuiteProperties\n"},
     "pytest_gpucheck.processes.batch -> pytest_gpucheck.processes.worker: the controller "
     "side imports the worker side"),
])
def test_the_worker_side_imports_nothing_of_the_controller_side(
        tmp_path: Path, name: str, files: dict[str, str], message: str) -> None:
    """What runs in a child (``worker.py``) and what both sides share (``wire.py``,
    ``guard.py``, ``sticky_errors.py``) import nothing else of the process layer (as
    pytest-xdist's ``remote.py`` depends on nothing else in xdist), and the controller
    side does not import the worker side."""
    clean = _check(_tree(tmp_path / "clean", SIDES))
    assert clean.returncode == 0, clean.stdout  # the twin: the worker imports the wire
    result = _check(_tree(tmp_path / "broken", {**SIDES, **files}))
    assert result.returncode == 1, result.stdout
    assert message in result.stdout, result.stdout


def test_the_top_level_holds_the_plugins_face_only() -> None:
    """At most 12 files directly in the package: the rest lives in folders by role."""
    import pytest_gpucheck

    files = sorted(p.name for p in Path(pytest_gpucheck.__file__).parent.iterdir() if p.is_file())
    assert len(files) <= 12, files


def test_importing_the_package_installs_no_import_hook() -> None:
    """The package is imported into every pytest process of an environment that has it
    installed: it adds no finder to ``sys.meta_path`` (the alias layer for moved module
    names, which no release ever shipped, did, and warned in users' runs)."""
    code = ("import sys; before = list(sys.meta_path); import pytest_gpucheck; "
            "print([type(f).__name__ for f in sys.meta_path if f not in before])")
    result = run_command([sys.executable, "-c", code], REPO, timeout=60)
    result.check_returncode()
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
