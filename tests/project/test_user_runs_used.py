"""tests/user_runs.py is the one way a test starts a process or builds a user's environment
(issue 42): no other file under tests/ calls ``subprocess`` (or ``os.system``, ``os.spawn*``,
``os.exec*``, or pytester's process runs: ``runpytest_subprocess``, ``run``, ``popen``)
itself, nor filters or copies ``os.environ`` by its own rule.  A test whose
point is a different environment says so through ``extra_env``, ``drop`` or
``first_on_path`` of :func:`user_runs.user_env`, not with a filter of its own."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

#: Files that may start a process or copy the environment themselves, each with its reason.
ALLOWED = {
    # The fake compute-sanitizer is the tool, not a test: it runs the user's program under
    # it and hands that program the environment it was given, whole, as the real tool does.
    "fake_compute_sanitizer.py",
}

#: What starts a process, by module.
STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "os": {"system", "popen", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve",
           "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv", "execve",
           "execvp", "execvpe", "posix_spawn", "posix_spawnp"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}
#: pytester's runs in a process of their own, on the fixture (``pytester``, or the older
#: ``testdir``): each hands its child this session's environment (``PYTEST_XDIST_WORKER``,
#: the plugin's ``PYTEST_GPUCHECK_*`` and all) with pytester's folder on PYTHONPATH, which
#: a user's run has not.  Its in-process runs (``runpytest``, ``inline_run``) start none.
PYTESTER_NAMES = {"pytester", "testdir"}
PYTESTER_STARTERS = {"runpytest_subprocess", "run", "popen", "spawn_pytest", "spawn"}
#: Names that are pytester's whatever object they are called on.
PYTESTER_ONLY = {"runpytest_subprocess", "spawn_pytest"}
#: Reading the whole environment: the start of a filter or copy of one's own.
WHOLE_ENVIRONMENT = {"items", "copy", "keys", "values"}


def _module_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for ``import subprocess [as sp]``, ``import os``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in STARTERS:
                    names[alias.asname or alias.name] = alias.name
    return names


def _is_environ(node: ast.AST, modules: dict[str, str], environ_names: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return isinstance(node.value, ast.Name) and modules.get(node.value.id) == "os"
    return isinstance(node, ast.Name) and node.id in environ_names


def violations(source: str, name: str) -> list[str]:
    """``name:line: what`` for each process started and each environment filtered or copied
    in ``source``, outside tests/user_runs.py."""
    tree = ast.parse(source)
    modules = _module_names(tree)
    environ_names: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            for alias in node.names:
                if alias.name in STARTERS[node.module]:
                    found.append(f"{name}:{node.lineno}: from {node.module} import "
                                 f"{alias.name} starts a process")
                if node.module == "os" and alias.name == "environ":
                    environ_names.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        # A call, not a type (``subprocess.Popen[str]``, ``subprocess.CompletedProcess``).
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)):
            module, what = modules.get(node.func.value.id), node.func.attr
            if module is not None and what in STARTERS[module]:
                found.append(f"{name}:{node.lineno}: {module}.{what} starts a process: "
                             "use user_runs.run_command, run_pytest or start_command")
            elif what in PYTESTER_STARTERS and (node.func.value.id in PYTESTER_NAMES
                                                or what in PYTESTER_ONLY):
                found.append(f"{name}:{node.lineno}: {node.func.value.id}.{what} starts a "
                             "process in this session's environment: use "
                             "user_runs.run_pytest or run_command in its folder")
        if (isinstance(node, ast.Attribute) and node.attr in WHOLE_ENVIRONMENT
                and _is_environ(node.value, modules, environ_names)):
            found.append(f"{name}:{node.lineno}: os.environ.{node.attr}() builds an "
                         "environment by its own rule: use user_runs.user_env")
        whole: list[ast.expr] = []
        if isinstance(node, ast.Call):
            whole = [*node.args, *(keyword.value for keyword in node.keywords)]
        elif isinstance(node, ast.BinOp):  # os.environ | {...}
            whole = [node.left, node.right]
        elif isinstance(node, ast.Dict):
            whole = [value for key, value in zip(node.keys, node.values, strict=True)
                     if key is None]
        for value in whole:
            if _is_environ(value, modules, environ_names):
                found.append(f"{name}:{value.lineno}: os.environ copied whole builds an "
                             "environment by its own rule: use user_runs.user_env")
    return sorted(set(found), key=lambda line: int(line.split(":")[1]))


def test_no_test_file_starts_a_process_or_filters_the_environment_itself() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS).as_posix()
        if name == "user_runs.py" or name in ALLOWED:
            continue
        found += violations(path.read_text(encoding="utf-8"), name)
    assert not found, "\n".join(found)


def test_every_allowed_file_still_needs_it() -> None:
    for name in ALLOWED:
        assert violations((TESTS / name).read_text(encoding="utf-8"), name), name


def test_the_check_sees_each_way_of_starting_a_process_and_copying_the_environment() -> None:
    planted = (
        "import os\nimport subprocess\nimport subprocess as sp\nfrom os import environ\n"
        "from subprocess import check_output\n"
        "subprocess.run(['x'])\n"
        "sp.Popen(['x'])\n"
        "os.system('x')\n"
        "env = {k: v for k, v in os.environ.items() if k != 'A'}\n"
        "env = {**os.environ, 'A': '1'}\n"
        "env = dict(environ)\n"
        "env = os.environ.copy()\n"
        "run(['x'], env=os.environ)\n"
        "env = os.environ | {'A': '1'}\n"
        "text = 'subprocess.run([1])'\n"  # a project's file in a string: not a call
        "value = os.environ.get('A'), os.environ['B']\n"  # reading one variable is fine
        "pytester.runpytest_subprocess('-v')\n"
        "pytester.run(sys.executable, '-c', 'pass')\n"
        "pytester.popen([sys.executable])\n"
        "testdir.runpytest_subprocess()\n"
        "peer.runpytest_subprocess()\n"  # pytester handed on under another name
        "pytester.runpytest('-v'), pytester.inline_run()\n"  # in-process: no process
        "runner.run(), engine.popen()\n"  # another object's run: not pytester's
    )
    assert [line.split(": ", 1)[0] for line in violations(planted, "t.py")] == [
        "t.py:5", "t.py:6", "t.py:7", "t.py:8", "t.py:9", "t.py:10", "t.py:11", "t.py:12",
        "t.py:13", "t.py:14", "t.py:17", "t.py:18", "t.py:19", "t.py:20", "t.py:21"]
