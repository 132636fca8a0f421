"""Check that the project's imports only point down, and that no subpackages import each other.

Run from the repository root::

    python scripts/check_layers.py

(``tests/project/test_layers.py`` runs it on this tree and on trees built to break each rule.)

Layers, top to bottom (a module may import its own layer and the layers below)::

    pytest_gpucheck.conformance        the bundled suites and implementations
    pytest_gpucheck                    the plugin: core modules and feature subpackages
    pytest_gpucheck.backends           one module or folder per framework (may use core
                                       modules, never a feature subpackage)
    pytest_gpucheck.reference_kernels  the NumPy references and their contracts

The folders ``conformance/`` and ``reference_kernels/`` install as
``pytest_gpucheck.conformance`` and ``pytest_gpucheck.reference_kernels``
(``pyproject.toml``'s ``package-dir``), and modules are named here as installed.
Two more rules keep each file loaded under one name only: no import may name a
folder's bare name (``conformance...``, ``reference_kernels...``: importable only
from a checkout's root, where it would load a second copy of a module the plugin
loads under its installed name), and the suite files pytest imports by path
(``test_*.py`` and ``conftest.py`` of ``conformance/``, named after the folder
in a checkout) may not import relatively, for the same reason.

The process layer (``pytest_gpucheck.processes``: the controller side, the worker
side, the wire and the routers) is reached only through its face: a module outside
it imports ``pytest_gpucheck.processes`` (its ``__init__``, which names what the
rest of the package may use), never a module inside it, so its insides can be
rearranged without edits elsewhere.  Inside it, the worker side (``worker.py``,
what runs in a child) and the modules both sides share (``wire.py``, ``guard.py``,
``sticky_errors.py``) import nothing else of the layer, and the controller side does
not import the worker side: the two meet on the wire, and a definition both need lives
in a shared module.

Every import counts, including imports inside functions and the module names
given to ``importlib.import_module`` / ``pluginmanager.import_plugin`` as string
literals: a lazy import is still a dependency.  Besides the layers, the
*units* (each top-level package, each subpackage of ``pytest_gpucheck`` and
each module directly in ``pytest_gpucheck``) must not form a cycle.  The rules
name packages, not files, so modules can move freely within their layer.
Modules must not form a cycle either (imports under ``if TYPE_CHECKING:`` are exempt
from this one: they never run), and no framework's folder under ``backends/`` (one
holding a ``backend.py``) imports another's: what two backends share lives in a
neutral module under ``backends/``.  Two more rules keep the plugin's package
(``pytest_gpucheck/``) readable: no module over :data:`MAX_MODULE_LINES` lines and no
function over :data:`MAX_FUNCTION_LINES`, no exception (the last ones were split in
issue 42); and nothing outside the process layer
starts a process (``subprocess.Popen``/``run``/..., ``os.fork``/``system``/``exec*``/
``spawn*``, ``multiprocessing``'s processes, ``pty.fork``, asyncio's subprocesses): a
child that the process layer did not start is one whose death, environment and end no
one answers for (no exception left: the MPI layer's last three moved in issue 42).  Exit
status 0 when clean; otherwise one line per offending import
(``file:line: a -> b``) and status 1.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Installed package name -> its folder in the repository (pyproject.toml's package-dir).
PACKAGE_DIRS = {"pytest_gpucheck": "pytest_gpucheck",
                "pytest_gpucheck.conformance": "conformance",
                "pytest_gpucheck.reference_kernels": "reference_kernels"}
PACKAGES = ("pytest_gpucheck",)
#: The folders' bare names: importable only from a checkout's root, never installed.
FOLDER_NAMES = ("conformance", "reference_kernels")
#: Layer prefixes, top first; a module belongs to the longest prefix that matches.
LAYERS = ("pytest_gpucheck.conformance", "pytest_gpucheck", "pytest_gpucheck.backends",
          "pytest_gpucheck.reference_kernels")
#: Packages the rest of the project reaches only through their ``__init__`` (the face).
FACED = ("pytest_gpucheck.processes",)
#: The process layer's worker side (what runs inside a child) and the modules it shares
#: with the controller side: these import no other module of the layer.
PROCESS_LAYER = "pytest_gpucheck.processes"
WORKER_SIDE = ("pytest_gpucheck.processes.worker",)
SHARED_BY_BOTH_SIDES = ("pytest_gpucheck.processes.wire", "pytest_gpucheck.processes.guard",
                        "pytest_gpucheck.processes.sticky_errors")
#: Calls whose first string argument names a module that gets imported.
IMPORTING_CALLS = ("import_module", "import_plugin", "__import__")
#: The longest module and function of the plugin's package, in lines: past them a file
#: holds several roles, a function several steps (the benchmark package's 982-line
#: gate.py and 128-line ``_interleaved``, issue 42).
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: The module a process-starting call lives in -> the calls of it that start one.
PROCESS_STARTERS = {
    "subprocess": ("Popen", "run", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"),
    "os": ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "spawnl",
           "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
           "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe"),
    "pty": ("fork", "spawn"),
    "multiprocessing": ("Process", "Pool", "get_context", "Manager"),
    "asyncio": ("create_subprocess_exec", "create_subprocess_shell"),
    "concurrent.futures": ("ProcessPoolExecutor",),
}
#: Modules outside the process layer that still start a process, each with why (the
#: list only shrinks: an entry that starts nothing any more is an error).

def module_name(path: Path) -> str:
    """The installed name of the module in ``path``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    package = next(name for name, folder in PACKAGE_DIRS.items() if folder == parts[0])
    return ".".join([package, *parts[1:]])


def module_path(dotted: str) -> Path | None:
    """Where the module named ``dotted`` (installed name) lives, without suffix; None if
    no package of the project holds it."""
    best = max((name for name in PACKAGE_DIRS if dotted == name or dotted.startswith(name + ".")),
               key=len, default=None)
    if best is None:
        return None
    rest = dotted[len(best):].lstrip(".")
    return ROOT.joinpath(PACKAGE_DIRS[best], *(rest.split(".") if rest else []))


def project_files() -> Iterator[Path]:
    for folder in PACKAGE_DIRS.values():
        yield from sorted((ROOT / folder).rglob("*.py"))


def imported_by_path(path: Path) -> bool:
    """A suite file pytest imports by its path (named after its folder in a checkout)."""
    rel = path.relative_to(ROOT)
    return rel.parts[0] == PACKAGE_DIRS["pytest_gpucheck.conformance"] and (
        rel.name == "conftest.py" or (rel.name.startswith("test_") and rel.suffix == ".py"))


def called_module(node: ast.Call) -> list[str]:
    """The module an ``import_module("a.b")``-style call names, as a one-item list (or none)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called in IMPORTING_CALLS and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [first.value]
    return []


def naming_problems(path: Path) -> Iterator[str]:
    """Imports that would load a project file under a second name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    location = path.relative_to(ROOT)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and imported_by_path(path):
                absolute = module_name(path).rpartition(".")[0]
                if node.module:
                    absolute = f"{absolute}.{node.module}"
                yield (f"{location}:{node.lineno}: relative import in a suite file pytest imports "
                       "by its path (a second copy of the module it names); import from "
                       f"{absolute} instead")
            elif not node.level:
                names = [node.module or ""]
        elif isinstance(node, ast.Call):
            names = called_module(node)
        for name in names:
            if name.split(".")[0] in FOLDER_NAMES:
                yield (f"{location}:{node.lineno}: imports {name} by its folder name; import "
                       f"pytest_gpucheck.{name} (the installed name)")


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in ``path`` that names a project module."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                module = f"{prefix}.{node.module}" if node.module else prefix
            else:
                module = node.module or ""
            # `from pkg import sub` may import the submodule pkg.sub.
            targets = [f"{module}.{alias.name}" for alias in node.names] or [module]
            targets = [t if _is_module(t) else module for t in targets]
        elif isinstance(node, ast.Call):
            targets = called_module(node)
        for target in targets:
            if target.split(".")[0] in PACKAGES:
                yield node.lineno, target


def _is_module(dotted: str) -> bool:
    path = module_path(dotted)
    return path is not None and (path.with_suffix(".py").is_file()
                                 or (path / "__init__.py").is_file())


def layer(module: str) -> int:
    """Index in :data:`LAYERS` (0 is the top) of the longest matching prefix."""
    best = -1
    for index, prefix in enumerate(LAYERS):
        if (module == prefix or module.startswith(prefix + ".")) and (
            best < 0 or len(prefix) > len(LAYERS[best])
        ):
            best = index
    return best


def points_up(source: str, target: str) -> bool:
    """Does ``source`` importing ``target`` go up a layer?

    The backends sit below the plugin's feature subpackages (bench, mpi, interop,
    ...), not below its core modules: a backend may use a low-level core module
    (the CUDA driver probe) as long as that module leads back to no backend,
    which the cycle check enforces.
    """
    if layer(source) == LAYERS.index("pytest_gpucheck.backends"):
        return is_feature(target) or layer(target) < LAYERS.index("pytest_gpucheck")
    return layer(target) < layer(source)


def unit(module: str) -> str:
    """The cycle-checked unit: a subpackage of the plugin, a module directly in the
    plugin's package (each core module is its own unit, so a low-level core module
    such as the device discovery may serve the backends as long as it imports
    nothing that leads back to them), or another top-level package."""
    parts = module.split(".")
    if parts[0] == "pytest_gpucheck" and len(parts) > 1:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def is_feature(module: str) -> bool:
    """A module of a plugin subpackage other than the backends (bench, mpi, interop...)."""
    parts = module.split(".")
    package = ".".join(parts[:2])
    if len(parts) <= 2 or parts[0] != "pytest_gpucheck" or package in PACKAGE_DIRS:
        return False  # the suites and the references are layers of their own, not features
    where = module_path(package)
    return parts[1] != "backends" and where is not None and (where / "__init__.py").is_file()


def behind_face(source: str, target: str) -> str | None:
    """The faced package whose insides ``source`` reaches into by importing ``target``
    (None when the import goes through the face, or stays inside the package)."""
    for package in FACED:
        inside = target.startswith(package + ".")
        if inside and not (source == package or source.startswith(package + ".")):
            return package
    return None


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in packages)


def crosses_sides(source: str, target: str) -> str | None:
    """Why ``source`` importing ``target`` joins the process layer's two sides (None if it
    does not): the worker side, or a module both sides share, imports a module of the
    layer that is neither (the controller side, the routers, or the face, which leads to
    them); or the controller side imports the worker side.  The two meet on the wire,
    as pytest-xdist's ``remote.py`` depends on nothing else in xdist; only the face
    names both (for the plugin, which installs the worker side in a child)."""
    own = (*WORKER_SIDE, *SHARED_BY_BOTH_SIDES)
    if not _within(source, (PROCESS_LAYER,)) or not _within(target, (PROCESS_LAYER,)):
        return None
    if _within(source, own) and not _within(target, own):
        side = "the worker side" if _within(source, WORKER_SIDE) else \
            "a module both sides share"
        return (f"{source} -> {target}: {side} imports the controller side; move what "
                "both need to wire.py (or another shared module)")
    if source != PROCESS_LAYER and not _within(source, own) and _within(target, WORKER_SIDE):
        return (f"{source} -> {target}: the controller side imports the worker side; move "
                "what both need to wire.py (or another shared module)")
    return None


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of mutually importing units (none: an acyclic graph)."""
    cycles: list[list[str]] = []
    covered: set[str] = set()
    for start in sorted(edges):
        if start in covered:
            continue
        # Breadth-first from `start` back to itself: the shortest cycle through it.
        previous: dict[str, str] = {}
        frontier = [start]
        found = False
        while frontier and not found:
            following: list[str] = []
            for node in frontier:
                for nxt in sorted(edges.get(node, ())):
                    if nxt == start:
                        path = [node]
                        while path[-1] != start:
                            path.append(previous[path[-1]])
                        cycle = [start, *reversed(path[:-1]), start]
                        cycles.append(cycle)
                        covered.update(cycle)
                        found = True
                        break
                    if nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
                if found:
                    break
            frontier = following
    return cycles


def typing_only_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks: imports that never run (only the type
    checker reads them), so they cannot make a module wait on another while loading."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                last = statement.end_lineno or statement.lineno
                lines.update(range(statement.lineno, last + 1))
    return lines


def existing_module(dotted: str) -> str:
    """``dotted``, or the nearest enclosing name that is a module of the project."""
    while not _is_module(dotted) and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def module_cycles() -> list[str]:
    """Modules that import each other, directly or round a longer circle.

    Every import counts as in the layer check (lazy ones inside functions and
    ``import_module("...")`` included), except imports under ``if TYPE_CHECKING:``:
    they are never executed, so they order no loading (a backend's protocol and the
    timer it returns may name each other's types).  A package's ``__init__`` is a
    module like any other."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for path in project_files():
        source = module_name(path)
        typing_only = typing_only_lines(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for line, target in imports(path):
            target = existing_module(target)
            if line in typing_only or target == source:
                continue
            edges.setdefault(source, set()).add(target)
            where.setdefault((source, target), f"{path.relative_to(ROOT)}:{line}")
    problems: list[str] = []
    for cycle in find_cycles(edges):
        problems.append("module import cycle: " + " -> ".join(cycle))
        problems.extend(f"  {where[(a, b)]}: {a} -> {b}" for a, b in itertools.pairwise(cycle))
    return problems


def framework_of(module: str) -> str | None:
    """The framework folder (``backends/<framework>/``, one holding a ``backend.py``) that
    ``module`` lives in, or None."""
    prefix = "pytest_gpucheck.backends."
    if not module.startswith(prefix):
        return None
    folder = module[len(prefix):].split(".")[0]
    where = module_path(prefix + folder)
    return folder if where is not None and (where / "backend.py").is_file() else None


def backends_importing_backends() -> list[str]:
    """Imports from one framework's folder into another's (typing-only ones too): what
    two backends share lives in a neutral module under ``backends/``."""
    problems: list[str] = []
    for path in project_files():
        source = module_name(path)
        mine = framework_of(source)
        if mine is None:
            continue
        for line, target in imports(path):
            theirs = framework_of(target)
            if theirs is not None and theirs != mine:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {source} -> {target}: the "
                                f"{mine} backend imports the {theirs} backend; move what they "
                                "share to a module under pytest_gpucheck/backends/ outside both")
    return problems


def _plugin_files() -> Iterator[Path]:
    """The plugin package's own modules (``pytest_gpucheck/``; the suites and the
    references are folders of their own)."""
    yield from sorted((ROOT / PACKAGE_DIRS["pytest_gpucheck"]).rglob("*.py"))


def too_long() -> list[str]:
    """Modules over :data:`MAX_MODULE_LINES` and functions over :data:`MAX_FUNCTION_LINES`
    of the plugin's package (none is allowed: the list of those not yet split emptied in
    issue 42, and went with its last entry)."""
    problems: list[str] = []
    for path in _plugin_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            problems.append(f"{rel}: {lines} lines, over {MAX_MODULE_LINES}; split it "
                            "by role")
        for node in ast.walk(ast.parse(text, str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{rel}:{node.lineno}: {node.name} is {length} lines, "
                                f"over {MAX_FUNCTION_LINES}; split it into steps")
    return problems


def _started_by(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The process-starting call (``subprocess.Popen``, through any alias the module
    imported it as) or import (``from os import fork``) that ``node`` is, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = ast.unparse(node.func.value)
        owner = aliases.get(owner, owner)
        if node.func.attr in PROCESS_STARTERS.get(owner, ()):
            return f"{owner}.{node.func.attr}"
    if isinstance(node, ast.ImportFrom) and not node.level:
        starters = PROCESS_STARTERS.get(node.module or "", ())
        for alias in node.names:
            if alias.name in starters:
                return f"{node.module}.{alias.name}"
    if isinstance(node, ast.Import):
        for alias in node.names:
            # multiprocessing.connection (a socket's framing) starts nothing.
            if alias.name == "multiprocessing" or (alias.name.startswith("multiprocessing.")
                                                   and alias.name != "multiprocessing.connection"):
                return alias.name
    return None


def processes_started_outside() -> list[str]:
    """Calls and imports that start a process in a module of the plugin's package outside
    the process layer (``pytest_gpucheck/processes/``)."""
    problems: list[str] = []
    for path in _plugin_files():
        rel = path.relative_to(ROOT).as_posix()
        if _within(module_name(path), (PROCESS_LAYER,)):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases = {alias.asname: alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.Import) for alias in node.names if alias.asname}
        for node in ast.walk(tree):
            started = _started_by(node, aliases)
            if started is None:
                continue
            problems.append(f"{rel}:{getattr(node, 'lineno', 0)}: {started} starts a "
                            "process outside the process layer; start it through "
                            "pytest_gpucheck.processes (name what you need in its face)")
    return problems


def check() -> list[str]:
    problems: list[str] = []
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for path in project_files():
        problems.extend(naming_problems(path))
        source = module_name(path)
        for line, target in imports(path):
            location = f"{path.relative_to(ROOT)}:{line}"
            if points_up(source, target):
                problems.append(f"{location}: {source} -> {target} imports up a layer")
            crossing = crosses_sides(source, target)
            if crossing is not None:
                problems.append(f"{location}: {crossing}")
            faced = behind_face(source, target)
            if faced is not None:
                problems.append(f"{location}: {source} -> {target} reaches inside {faced}; "
                                f"import it from {faced} (name it in its __init__)")
            a, b = unit(source), unit(target)
            if a != b and b != "pytest_gpucheck":
                edges.setdefault(a, set()).add(b)
                where.setdefault((a, b), f"{location}: {source} -> {target}")
    for cycle in find_cycles(edges):
        problems.append("import cycle: " + " -> ".join(cycle))
        problems.extend(f"  {where[(a, b)]}" for a, b in itertools.pairwise(cycle))
    problems.extend(module_cycles())
    problems.extend(backends_importing_backends())
    problems.extend(too_long())
    problems.extend(processes_started_outside())
    return problems


def main(argv: list[str]) -> int:
    global ROOT
    if argv[:1] == ["--root"] and len(argv) == 2:
        ROOT = Path(argv[1]).resolve()  # another tree laid out like this one (the tests')
    elif argv:
        print("usage: python scripts/check_layers.py [--root FOLDER]")
        return 2
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        return 1
    count = sum(1 for _ in project_files())
    print(f"layers ok: {count} modules, imports only point down, no cycle between "
          "subpackages or modules, no backend imports another, the process layer reached "
          f"through its face and the only one to start processes, no module over "
          f"{MAX_MODULE_LINES} lines or function over {MAX_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
