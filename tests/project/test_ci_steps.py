"""``.ci/run``'s steps and docs/ci.md's table of them stay the same list.

The table ("This project's CI, step by step") gives each step's seconds as measured in a
clean clone; a step added to the script without a row, or a row left for a step that is
gone, fails here.  The script's ``step`` function is run too: a passing step prints its
time, a failing one ends CI without printing one.
"""

from __future__ import annotations

import re
from pathlib import Path

from user_runs import run_command

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "run"
DOC = REPO / "docs" / "ci.md"
HEADING = "### This project's CI, step by step"


def script_steps(script: str) -> list[str]:
    """The steps ``.ci/run`` runs, in order: its ``step NAME`` lines and its nox sessions
    (``nox_session NAME``), each nox session named ``nox NAME``."""
    steps = []
    for line in script.splitlines():
        if match := re.match(r"step ([\w-]+) ", line):
            steps.append(match[1])
        elif match := re.match(r"(?:\w+=\S+ )?nox_session ([\w.-]+)", line):
            steps.append(f"nox {match[1]}")
    return steps


def table_steps(doc: str) -> list[str]:
    """The first column of the table under HEADING, in order (backticks taken off)."""
    section = doc[doc.index(HEADING):]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("| `"):
            rows.append(line.split("|")[1].strip().strip("`"))
    return rows


def test_the_docs_table_lists_the_scripts_steps_in_order() -> None:
    steps = script_steps(SCRIPT.read_text(encoding="utf-8"))
    assert steps[:2] == ["install", "lint"], steps
    assert "main-job" in steps, steps
    assert "test-suite" in steps, steps
    assert table_steps(DOC.read_text(encoding="utf-8")) == steps


def test_a_step_without_a_row_is_found() -> None:
    """The broken twin: a script with one step more than the table no longer matches."""
    script = SCRIPT.read_text(encoding="utf-8").replace(
        "step lint lint\n", "step lint lint\nstep docs-build make docs\n")
    steps = script_steps(script)
    assert "docs-build" in steps
    assert table_steps(DOC.read_text(encoding="utf-8")) != steps


def _step_function() -> str:
    script = SCRIPT.read_text(encoding="utf-8")
    start = script.index("step() {")
    return script[start:script.index("\n}\n", start) + 3]


def test_a_passing_step_prints_its_time_and_a_failing_one_ends_the_run() -> None:
    program = ("set -euo pipefail\n" + _step_function()
               + "step good true\nstep bad false\necho after\n")
    done = run_command(["bash", "-c", program], REPO, timeout=30)
    assert done.returncode == 1
    assert re.fullmatch(r"ci step good: \d+ s\n", done.stdout), done.stdout
