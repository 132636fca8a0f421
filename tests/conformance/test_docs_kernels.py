"""The worked examples of ``docs/kernels.md`` pass the bundled suites.

Each example is a ``conftest.py`` preceded by ``<!-- example: BACKEND KERNEL -->``.
The test writes it to a fresh directory as a module, loads it as a plugin
(``PYTEST_PLUGINS``, so the simulator child loads it too, exactly as pytest
loads a ``conftest.py``) and runs the kernel's suite on that backend with
``--gpu-impls=user``: the example's implementation must pass.  Examples whose
backend is unavailable here (CuPy without a GPU) are skipped with the reason.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from user_runs import junit_outcomes, run_command, run_pytest

from pytest_gpucheck import conformance
from pytest_gpucheck.backends import get_backend

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]
DOC = REPO / "docs" / "kernels.md"
SUITES = Path(conformance.__file__).parent
EXAMPLE = re.compile(r"<!-- example: (\S+) (\S+) -->\n```python\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str, str]]:
    """(backend, kernel, code) of every marked example in the document."""
    return EXAMPLE.findall(DOC.read_text(encoding="utf-8"))


def test_the_document_has_the_promised_examples() -> None:
    backends = {backend for backend, _, _ in examples()}
    assert {"numba-cudasim", "cupy", "jax-cpu"} <= backends


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One run of the suites with every example whose backend is available here, each
    loaded as a plugin of its own, on those backends: the run's JUnit file and its
    output.  One process instead of one per example (each paid an interpreter and its
    framework imports); each example's test reads its own cell."""
    where = tmp_path_factory.mktemp("docs_examples")
    plugins, backends, kernels = [], [], []
    for number, (backend, kernel, code) in enumerate(examples()):
        if get_backend(backend).probe().available:
            (where / f"docs_example_{number}.py").write_text(code, encoding="utf-8")
            plugins.append(f"docs_example_{number}")
            backends.append(backend)
            kernels.append(f"test_{kernel}[")
    junit = where / "junit.xml"
    # user_env leaves out this session's PYTEST_ADDOPTS.
    env = {"PYTHONPATH": os.pathsep.join([str(where), str(REPO)]),
           "PYTEST_PLUGINS": ",".join(plugins)}
    command = [sys.executable, "-m", "pytest", str(SUITES), "--rootdir", str(SUITES.parent),
               "-p", "no:cacheprovider", "-q", "-rfE", "-n0",
               f"--gpu-backends={','.join(dict.fromkeys(backends))}",
               "--gpu-impls=user", "-m", "gpu_kernel",
               "-k", " or ".join(dict.fromkeys(kernels)), "--hypothesis-profile=gpucheck-ci",
               f"--junitxml={junit}"]
    result = run_command(command, where, timeout=1200, extra_env=env)
    return junit, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.parametrize(("backend", "kernel", "code"), examples(),
                         ids=[f"{b}-{k}" for b, k, _ in examples()])
def test_example_passes_the_suite(examples_run: tuple[Path, str], backend: str,
                                  kernel: str, code: str) -> None:
    probe = get_backend(backend).probe()
    if not probe.available:
        pytest.skip(f"{backend}: {probe.reason}")
    junit, tail = examples_run
    assert junit.is_file(), tail
    # The example's one item (it registers as `mine`), and it passed.
    cells = {name: outcome for name, outcome in junit_outcomes(junit).items()
             if name.startswith(f"test_{kernel}[{backend}:")}
    assert list(cells) == [f"test_{kernel}[{backend}:mine]"], (cells, tail)
    assert cells[f"test_{kernel}[{backend}:mine]"][0] == "passed", (cells, tail)


ASSERTIONS_DOC = REPO / "docs" / "assertions.md"
TEST_EXAMPLE = re.compile(r"<!-- example: (test_\w+\.py) -->\n```python\n(.*?)```", re.DOTALL)


def test_assertions_doc_example_runs_as_documented_on_the_cpu_tier(tmp_path: Path) -> None:
    """The example, in a project of its own, run with the command the page prints."""
    text = ASSERTIONS_DOC.read_text(encoding="utf-8")
    (name, code), = TEST_EXAMPLE.findall(text)
    (tmp_path / name).write_text(code, encoding="utf-8")
    command, = re.findall(r"^\$ pytest (.*)$", text, re.MULTILINE)
    result = run_pytest(tmp_path, *command.split(), timeout=1200)
    tail = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    # The page's skip line and counts, as printed (the time differs).
    documented = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    skip_line, counts = documented[0], documented[1].split(" in ")[0].strip("= ")
    assert skip_line in result.stdout, tail
    assert re.search(rf"\b{counts} in ", result.stdout), tail
    assert "AttributeError" not in result.stdout, tail


def test_assertions_doc_failure_text_is_what_the_helper_prints() -> None:
    import numpy as np

    from pytest_gpucheck.checking import tolerance
    from pytest_gpucheck.checking.assertions import assert_matches_reference

    text = ASSERTIONS_DOC.read_text(encoding="utf-8")
    documented = text.split("```text\n", 2)[2].split("```", 1)[0].strip()
    x = np.arange(1, 1001, dtype=np.float32)
    with pytest.raises(AssertionError) as info:
        assert_matches_reference(np.array([x[:-1].sum()], np.float32),
                                 np.array([x.sum(dtype=np.float64)], np.float32),
                                 tolerance.sum_rule(x, np.float32), "my_sum(n=1000) on numpy")
    assert str(info.value) == documented
