"""The example CI workflows run as written: their commands come from the files.

``docs/ci/github-actions.yml`` and ``docs/ci/gitlab-ci.yml`` are what users
copy.  Every ``python -m pytest`` command of their CPU jobs runs here (restricted
with ``PYTEST_ADDOPTS=-k`` to the user's kernel and test, to stay cheap), in a
temporary project laid out as the workflows expect (a ``conftest.py`` that
registers implementations, a ``tests/`` folder), with the variables the CI
sets; every command of the GPU jobs runs too and must stop at once with the
``--gpu-require=gpu`` error, since this machine has no GPU: a runner that lost
its GPU fails.  The install commands cannot run here (no network beyond the
package index), so their extras are checked against ``pyproject.toml``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from user_runs import run_command, user_ci_project

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (the minimal and oldest sessions): tomllib's forerunner
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / "docs" / "ci" / "github-actions.yml"
GITLAB = REPO / "docs" / "ci" / "gitlab-ci.yml"

def _commands(script: str) -> list[str]:
    """Shell lines of a ``run:`` block or a ``script:`` list, ``&&`` chains split."""
    lines = []
    for line in script.splitlines():
        lines.extend(part.strip() for part in line.split("&&") if part.strip())
    return lines


def github_commands(job: str) -> tuple[dict[str, str], list[str]]:
    workflow = yaml.safe_load(GITHUB.read_text())
    steps = workflow["jobs"][job]["steps"]
    commands = [line for step in steps if "run" in step for line in _commands(step["run"])]
    return {k: str(v) for k, v in workflow.get("env", {}).items()}, commands


def gitlab_commands(job: str) -> tuple[dict[str, str], list[str]]:
    pipeline = yaml.safe_load(GITLAB.read_text())
    commands = [line for entry in pipeline[job]["script"] for line in _commands(entry)]
    return {k: str(v) for k, v in pipeline.get("variables", {}).items()}, commands


def _run(command: str, project: Path,
         variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_command(["bash", "-c", command], project, timeout=1200, extra_env=variables)


EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_install_commands_name_existing_extras_and_the_cpu_wheels(source: Any) -> None:
    _, cpu = source("cpu")
    _, gpu = source("gpu")
    installs = [c for c in cpu + gpu if c.startswith("python -m pip install")]
    assert len(installs) == 3
    for command in installs:
        for extras in re.findall(r"pytest-gpucheck\[([^\]]+)\]", command):
            assert set(extras.split(",")) <= set(EXTRAS), command
    # The CPU job takes PyTorch from its CPU wheel index first; the cpu extra
    # then finds torch installed and downloads no CUDA build, no nvidia-* library.
    assert cpu[0] == ("python -m pip install torch --index-url "
                      "https://download.pytorch.org/whl/cpu")
    assert "pytest-gpucheck[cpu]" in cpu[1]
    assert any(dep.startswith("torch") for dep in EXTRAS["cpu"])
    assert not any(dep.startswith(("nvidia", "triton")) for dep in EXTRAS["cpu"])

@pytest.mark.slow
@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_cpu_job_commands_pass_here(source: Any, tmp_path: Path) -> None:
    variables, commands = source("cpu")
    project = user_ci_project(tmp_path)
    summary = tmp_path / "step_summary"
    summary.write_text("")
    variables.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary),
                     GITHUB_WORKSPACE=str(project))
    # Only the user's own kernel and test, not every bundled suite (the main CI job
    # runs those): the commands, options, reports and summary are what is tested.
    variables["PYTEST_ADDOPTS"] += " -k 'vector_add or test_scale'"
    pytest_commands = [c for c in commands if c.startswith("python -m pytest")]
    assert len(pytest_commands) == 2
    for command in pytest_commands:
        result = _run(command, project, variables)
        assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-2000:])
        # test_scale runs on the five CPU backends with an array namespace (array-api-strict
        # included); the conformance run (no path: the project and the suites) adds the two
        # user implementations of vector_add.
        passed = "7 passed" if "--gpu-conformance" in command else "5 passed"
        assert re.search(rf"\b{passed}\b", result.stdout), result.stdout[-2000:]
        for report in re.findall(r"--(?:gpu-report|junitxml)=(\S+)", command):
            assert (project / report).stat().st_size > 0, report
    assert summary.read_text().count("## ✅ gpucheck:") == 2


@pytest.mark.slow
@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_gpu_job_commands_fail_fast_without_a_gpu(source: Any, tmp_path: Path) -> None:
    variables, commands = source("gpu")
    project = user_ci_project(tmp_path)
    (project / "benchmarks").mkdir()
    # The benchmark gate's checkout of the base commit, as the job's own lines do it
    # (no base commit given: the previous one) in a repository of two commits.
    for line in ("git init -q", "git add -A", "git commit -q -m one",
                 "git commit -q --allow-empty -m two"):
        done = run_command(["/bin/sh", "-c", line], project, timeout=None, extra_env={
            "GIT_AUTHOR_NAME": "u", "GIT_COMMITTER_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
            "GIT_COMMITTER_EMAIL": "u@x"})
        assert done.returncode == 0, done.stderr
    checkout = "\n".join(c for c in commands if c.startswith(("base=", "if ", "git ")))
    assert "git worktree add" in checkout
    # No base commit given (GITHUB_SHA, CI_COMMIT_SHA): the previous one.
    done = run_command(["bash", "-ec", checkout], project, timeout=None, drop=["*_SHA"])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "gpucheck-base" / "tests").is_dir()
    for command in commands:
        if command.startswith("mkdir "):
            assert _run(command, project, variables).returncode == 0
    pytest_commands = [c for c in commands if c.startswith("python -m pytest ")]
    assert len(pytest_commands) == 3
    for command in pytest_commands:
        assert "--gpu-require=gpu" in shlex.split(command)
        result = _run(command, project, variables)
        assert result.returncode == 4, (command, result.stdout[-2000:], result.stderr[-2000:])
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("ERROR: --gpu-require=gpu:"), line
    # The history step needs no GPU: on the (empty) baseline folder it says so.
    for command in commands:
        if command.startswith("python -m pytest_gpucheck.bench.history"):
            result = _run(command, project, variables)
            assert result.returncode == 0, result.stderr
            assert "no stored runs in .gpucheck-baselines" in result.stdout


@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_the_nightly_sanitizer_job_installs_the_tool_and_sanitizes_every_command(
        source: Any) -> None:
    _, commands = source("sanitize")
    (install,) = [c for c in commands if c.startswith("python -m pip install")]
    (extras,) = re.findall(r"pytest-gpucheck\[([^\]]+)\]", install)
    assert set(extras.split(",")) <= set(EXTRAS)
    assert any(extra.startswith("sanitize-") for extra in extras.split(","))
    pytest_commands = [c for c in commands if c.startswith("python -m pytest ")]
    assert len(pytest_commands) == 2
    for command in pytest_commands:
        args = shlex.split(command)
        assert "--gpu-require=gpu" in args
        assert any(arg.startswith("--gpu-sanitize=memcheck") for arg in args)


@pytest.mark.slow
@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_the_nightly_sanitizer_job_fails_fast_without_a_gpu(source: Any, tmp_path: Path) -> None:
    variables, commands = source("sanitize")
    project = user_ci_project(tmp_path)
    for command in [c for c in commands if c.startswith("python -m pytest ")]:
        result = _run(command, project, variables)
        assert result.returncode == 4, (command, result.stdout[-2000:], result.stderr[-2000:])
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("ERROR: --gpu-require=gpu:"), line


@pytest.mark.parametrize("source", [github_commands, gitlab_commands], ids=["github", "gitlab"])
def test_installs_take_pytest_gpucheck_from_its_source_not_the_package_index(
        source: Any) -> None:
    """pytest-gpucheck is not on PyPI (docs/getting-started.md), and the copied workflow
    installed ``pytest-gpucheck[cpu]`` from it: it failed at install.  Each install now names
    ``GPUCHECK_SOURCE`` (a git URL or a checkout's ``file://`` URL): unset, the line stops
    before pip with the message that says what to set; set, it is a direct reference to
    pytest-gpucheck with extras of ``pyproject.toml``."""
    from packaging.requirements import Requirement

    installs = [command for job in ("cpu", "gpu", "sanitize") for command in source(job)[1]
                if command.startswith("python -m pip install") and "pytest-gpucheck" in command]
    assert len(installs) == 3
    for command in installs:
        shown = command.replace("python -m pip install", "printf '%s\\n'", 1)
        unset = run_command(["bash", "-c", shown], REPO, timeout=None, drop=["GPUCHECK_SOURCE"])
        assert unset.returncode != 0, command
        assert unset.stdout == ""
        assert "GPUCHECK_SOURCE: set GPUCHECK_SOURCE to where pip gets pytest-gpucheck" in \
            unset.stderr, unset.stderr
        given = run_command(["bash", "-c", shown], REPO, timeout=None,
                            extra_env={"GPUCHECK_SOURCE": REPO.as_uri()})
        given.check_returncode()
        requirement = Requirement(given.stdout.splitlines()[0])
        assert requirement.name == "pytest-gpucheck"
        assert requirement.url == REPO.as_uri()
        assert requirement.extras <= set(EXTRAS)
        assert given.stdout.splitlines()[1:] == ["-e", "."]


def test_docs_ci_installs_nothing_named_pytest_gpucheck_from_the_index() -> None:
    """docs/ci.md's commands and noxfile take pytest-gpucheck from GPUCHECK_SOURCE too."""
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    # Quoted requirements, not the path of the checkout (`... / "pytest-gpucheck"`).
    requirements = re.findall(r"(?<!/ )[\"'](pytest-gpucheck(?:\[[^\]]*\])?[^\"']*)[\"']",
                              text)
    assert len(requirements) == 4, requirements  # the CPU job's, three nox sessions'
    for requirement in requirements:
        assert " @ " in requirement, requirement
