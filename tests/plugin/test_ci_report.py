"""What a CI page shows, tested as a user's GitHub Actions step runs it.

A temporary project registers a deliberately wrong ``vector_add`` on every
CPU-tier backend in its ``conftest.py`` and runs the documented command in a
subprocess with the variables GitHub Actions sets.  The job summary, the
annotations, the JUnit properties and the rerun commands must all come out
of that run; the bad-input cases must cost one line and leave the verdict
alone.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from user_runs import numba_elementwise, run_command

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

CONFTEST = '''
import pytest_gpucheck
from numba import cuda, njit


@pytest_gpucheck.implements("vector_add", backend="numpy", name="mine")
def vector_add_numpy(a, b, out):
    out[...] = a - b  # wrong on purpose

''' + numba_elementwise("vector_add", "a, b", "a[i] - b[i]  # wrong on purpose") + '''


@pytest_gpucheck.implements("vector_add", backend="jax-cpu", name="mine")
def vector_add_jax(a, b):
    return a - b


@pytest_gpucheck.implements("vector_add", backend="torch-cpu", name="mine")
def vector_add_torch(a, b, out):
    out.copy_(a - b)
'''
# numba-cudasim runs in the same step; its annotation has its own test below.
BACKENDS = ("numpy", "numba-cpu", "jax-cpu", "torch-cpu")
SIMULATOR = "numba-cudasim"
COMMAND = ["--gpu-conformance", "--gpu-impls=user", "-k", "vector_add",
           "--hypothesis-profile=gpucheck-ci", "-p", "no:cacheprovider"]
#: The runs that use no hypothesis (none of the bundled suites) go without its pytest
#: plugin, which imports all of hypothesis at the terminal summary (about 0.7 s of CPU).
LEAN = ["-p", "no:hypothesispytest"]


def _environment(**variables: str) -> dict[str, str]:
    """The CI step's own variables (:func:`user_runs.user_env` adds them to the user's)."""
    return variables


def _pytest(cwd: Path, args: list[str],
            variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_command([sys.executable, "-m", "pytest", *args], cwd, timeout=1200,
                       extra_env=variables)


def _line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def github_step(tmp_path_factory: pytest.TempPathFactory,
                ) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One GitHub Actions step of the project on every CPU-tier backend (the simulator's
    test reads its own line): the project, the job summary file and the run."""
    tmp_path = tmp_path_factory.mktemp("github_step")
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    summary = tmp_path / "step_summary"
    summary.write_text("output of an earlier step\n")
    env = _environment(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary),
                       GITHUB_WORKSPACE=str(project), GITHUB_SHA="0123abc")
    result = _pytest(project, [*COMMAND, f"--gpu-backends={','.join(BACKENDS)},{SIMULATOR}",
                               "--junitxml=junit.xml"], env)
    return project, summary, result


def test_github_step_shows_failures_annotations_and_junit_properties(
        github_step: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    project, summary, result = github_step
    out = result.stdout
    assert result.returncode == 1, out[-4000:] + result.stderr[-2000:]

    # The job summary: appended after the earlier step's text, failures first.
    text = summary.read_text()
    assert text.startswith("output of an earlier step\n## ❌ gpucheck: 5 fail"), text[:200]
    failures = text.index("### Failures (5)")
    assert failures < text.index("| family |") < text.index("<details>")
    for backend in (*BACKENDS, SIMULATOR):
        assert re.search(rf"- ❌ `\S*test_vector_add\[{backend}:mine\]`: \S+Error", text), backend
    assert "commit 0123abc" in text
    assert "<summary>Run, versions and legend</summary>" in text

    # One annotation per failure, at the line where the user registered the implementation.
    conftest = CONFTEST  # as written to the file
    names = {"numpy": "numpy", "numba-cpu": "numba", "jax-cpu": "jax", "torch-cpu": "torch"}
    for backend, suffix in names.items():
        # co_firstlineno is the first decorator's line.
        line = _line_of(conftest, f'backend="{backend}"')
        assert _line_of(conftest, f"def vector_add_{suffix}(") == line + 1
        pattern = (rf"^::error file=conftest.py,line={line},title=gpucheck%3A "
                   rf"\S*test_vector_add\[{backend}%3Amine\]::\S*Error.*%0Arerun: pytest ")
        assert re.search(pattern, out, re.MULTILINE), (backend, out[-3000:])

    # JUnit XML: backend, family, kernel, device and seed on every conformance case.
    cases = ET.parse(project / "junit.xml").getroot().iter("testcase")
    seen = set()
    for case in cases:
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        seen.add(properties["gpucheck.backend"])
        assert properties["gpucheck.kernel"] == "vector_add"
        assert properties["gpucheck.family"]
        assert properties["gpucheck.device"]
        assert properties["gpucheck.seed"].isdigit()
    assert seen == {*BACKENDS, SIMULATOR}

    # The printed rerun command, run as printed, fails again for the same reason.
    rerun = re.search(r"test_vector_add\[numpy:mine\]`: (.*)\n  rerun: `(.*)`", text)
    assert rerun is not None
    reason, command = rerun.groups()
    args = shlex.split(command)
    # The harness's own rerun line (the one under the traceback), used as it is.
    assert args[:3] == ["pytest", "-k", "test_vector_add[numpy:mine]"]
    assert f"  rerun: {command}" in out
    assert "--gpu-conformance" in args
    assert "--gpu-impls=user" in args
    # No --hypothesis-seed here: the boundary sweep catches this kernel before
    # hypothesis draws, so the failure needs no seed to come back (checked below).
    again = _pytest(project, [*args[1:], "-p", "no:cacheprovider"], _environment())
    assert again.returncode == 1, again.stdout[-3000:]
    # The same reason, in pytest's traceback and short summary (the plugin repeats
    # neither where pytest shows it whole).
    assert reason.replace(chr(92) + "|", "|") in again.stdout
    assert re.search(r"\b1 failed\b", again.stdout)


PLAIN_TESTS = """
def test_ok(gpu_backend):
    pass


def test_bad(gpu_backend):
    assert gpu_backend.name == "nothing"
"""


@pytest.mark.parametrize("failing", [True, False])
def test_unwritable_summary_is_one_line_and_keeps_the_verdict(tmp_path: Path,
                                                              failing: bool) -> None:
    (tmp_path / "test_things.py").write_text(PLAIN_TESTS if failing else "def test_ok(): pass\n")
    missing = tmp_path / "no-such-folder" / "summary"
    result = _pytest(tmp_path, ["-p", "no:cacheprovider", *LEAN, "--gpu-backends=numpy"],
                     _environment(GITHUB_STEP_SUMMARY=str(missing)))
    assert result.returncode == (1 if failing else 0), result.stdout[-2000:]
    lines = [line for line in result.stdout.splitlines() if "job summary" in line]
    assert lines == [f"gpucheck: could not append the job summary to {missing}: No such file or "
                     "directory; the verdict is unchanged, the full report is in the terminal "
                     "above (and --gpu-report if given)"] if failing else lines == []
    assert not missing.parent.exists()


def test_unwritable_report_is_refused_before_collection(tmp_path: Path) -> None:
    (tmp_path / "test_things.py").write_text("def test_ok(gpu_backend): pass\n")
    (tmp_path / "afile").write_text("")
    result = _pytest(tmp_path, ["-p", "no:cacheprovider", *LEAN, "--gpu-report=afile/report.md"],
                     _environment())
    assert result.returncode == 4, result.stdout[-2000:]
    assert re.fullmatch(r"ERROR: --gpu-report='afile/report.md': \S*afile is a file, not a "
                        r"folder; choose another path", result.stderr.strip()), result.stderr
    assert (tmp_path / "afile").read_text() == ""


def test_report_to_the_summary_variable_names_the_fix(tmp_path: Path) -> None:
    (tmp_path / "test_things.py").write_text("def test_ok(): pass\n")
    summary = tmp_path / "step_summary"
    result = _pytest(tmp_path, ["-p", "no:cacheprovider", *LEAN, f"--gpu-report={summary}"],
                     _environment(GITHUB_STEP_SUMMARY=str(summary)))
    assert result.returncode == 4
    assert "$GITHUB_STEP_SUMMARY is appended to automatically" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_annotation_for_an_implementation_outside_the_repository(tmp_path: Path) -> None:
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    (elsewhere / "their_kernels.py").write_text(
        "import pytest_gpucheck\n\n\n"
        "@pytest_gpucheck.implements('vector_add', backend='numpy', name='theirs')\n"
        "def add(a, b, out):\n    out[...] = a * b\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(elsewhere)!r})\nimport their_kernels  # noqa\n")
    result = _pytest(project, [*COMMAND, "--gpu-backends=numpy"],
                     _environment(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(project)))
    assert result.returncode == 1, result.stdout[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert line.startswith("::error title=gpucheck%3A ")  # no file= GitHub could not resolve
    assert (f"%0A(defined at {elsewhere / 'their_kernels.py'}:4, outside the repository "
            f"{project.resolve()})") in line


def test_simulator_failure_of_a_user_implementation_is_annotated(
        github_step: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    _, _, result = github_step
    line = _line_of(CONFTEST, 'backend="numba-cudasim"')
    assert re.search(rf"^::error file=conftest.py,line={line},.*::\S*Error: out\[",
                     result.stdout, re.MULTILINE), result.stdout[-3000:]
