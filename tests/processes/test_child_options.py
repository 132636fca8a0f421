"""Every command-line option reaches the child processes that need it, or is refused.

The table (``pytest_gpucheck/processes/child_options.py``) must name every option of a real
run's parser, so a new option cannot be dropped on the way to a worker unnoticed;
forwarded options must arrive in an isolation worker as given; and an option that
cannot reach a worker stops the run before collection with one line and exit 4.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from user_runs import run_command, run_pytest

from pytest_gpucheck.processes.child_options import (
    FORWARD,
    OPTIONS,
    PARENT,
    REFUSE,
    given_options,
    rule_for,
)

#: Options of the plugins the table covers, which other versions may lack or add.
THIRD_PARTY = ("--benchmark-", "--hypothesis-")
XDIST = {"--numprocesses", "--maxprocesses", "--max-worker-restart", "--dist",
         "--loadscope-reorder", "--no-loadscope-reorder", "--tx", "--px", "-d", "--rsyncdir",
         "--rsyncignore", "--testrunuid", "--maxschedchunk", "--looponfail"}


def unclassified(names: list[str]) -> list[str]:
    """The options of a parser the table does not name."""
    return [name for name in names if name not in OPTIONS]


@pytest.mark.slow
def test_the_table_names_every_option_of_a_real_run(tmp_path: Path) -> None:
    # A real run with every plugin of this environment, the cache provider included.
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""\
        import json, os
        from pytest_gpucheck.processes.child_options import parser_options

        def pytest_configure(config):
            with open(os.environ["OPTIONS_OUT"], "w") as out:
                json.dump(parser_options(config), out)
        """))
    out = tmp_path / "options.json"
    done = run_command([sys.executable, "-m", "pytest", "--co", "-q"], tmp_path, timeout=900,
                       extra_env={"OPTIONS_OUT": str(out)})
    assert out.exists(), done.stdout + done.stderr
    names = json.loads(out.read_text())
    assert {"--lf", "--sw", "--benchmark-json", "--numprocesses", "--hypothesis-seed",
            "--gpu-isolate", "-s", "--capture"} <= set(names)
    assert unclassified(names) == [], "classify these in child_options.OPTIONS"
    # No stale row of pytest's or the plugin's own (a misspelt name classifies nothing).
    stale = [name for name in OPTIONS if name not in names
             and not name.startswith(THIRD_PARTY) and name not in XDIST]
    assert stale == []


def test_the_enumeration_catches_an_option_missing_from_the_table() -> None:
    assert unclassified(["--capture", "--gpu-new-option"]) == ["--gpu-new-option"]
    assert unclassified(["--capture", "--pdb"]) == []


def test_each_rule_says_why() -> None:
    for name, rule in OPTIONS.items():
        assert rule.kind in (FORWARD, PARENT, "plugin", REFUSE), name
        assert len(rule.why) > 10, name
    assert rule_for("--pdb").kind == REFUSE
    assert rule_for("--benchmark-disable").kind == FORWARD
    # Each child hands its benchmarks back (bench.relay): pytest-benchmark writes them here.
    for name in ("--benchmark-json", "--benchmark-save", "--benchmark-autosave",
                 "--benchmark-compare", "--benchmark-compare-fail", "--benchmark-histogram"):
        assert rule_for(name).kind == PARENT, name
    assert rule_for("--junitxml").kind == PARENT
    assert rule_for("--a-conftest-option").kind == FORWARD  # the child loads the conftest


def test_given_options_keeps_the_tokens_as_written(pytester: pytest.Pytester) -> None:
    (pytester.path / "more.txt").write_text("--benchmark-min-rounds=7\n")
    config = pytester.parseconfig("-vvs", "-rA", "--benchmark-compare", "-W", "error::UserWarning",
                                  "--tb=native", "-o", "xfail_strict=true", "@more.txt",
                                  "some_dir")
    given = [g for g in given_options(config) if g[0] != "--basetemp"]  # pytester's own
    assert given == [
        ("--verbose", ["-v"]), ("--verbose", ["-v"]), ("-s", ["-s"]),
        ("--report-chars", ["-rA"]), ("--benchmark-compare", ["--benchmark-compare"]),
        ("--pythonwarnings", ["-Werror::UserWarning"]), ("--tb", ["--tb=native"]),
        ("--override-ini", ["-oxfail_strict=true"]),
        ("--benchmark-min-rounds", ["--benchmark-min-rounds=7"]),
    ]


PROJECT_TEST = textwrap.dedent("""\
    import json
    import os

    import numpy as np


    def test_options(gpu_backend, request, gpu_benchmark):
        config = request.config
        seen = {
            "in_worker": bool(os.environ.get("PYTEST_GPUCHECK_REPORT_SINK")),
            "benchmark_disable": config.getoption("benchmark_disable"),
            "benchmark_min_rounds": config.getoption("benchmark_min_rounds"),
            "tbstyle": config.getoption("tbstyle"),
            "verbose": config.getoption("verbose"),
            "runslow": config.getoption("runslow"),
            "xfail_strict": config.getini("xfail_strict"),
            "xmlpath": config.getoption("xmlpath"),
            "keyword": config.getoption("keyword"),
        }
        with open(os.environ["SEEN_OUT"], "w") as out:
            json.dump(seen, out)
        gpu_benchmark(np.add, np.ones(4), np.ones(4))
    """)


@pytest.mark.slow
def test_options_reach_an_isolation_worker_as_given(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ngpu_backends = numpy\naddopts = -v\n")
    (tmp_path / "conftest.py").write_text(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--runslow', action='store_true')\n")
    (tmp_path / "test_options.py").write_text(PROJECT_TEST)
    seen_out = tmp_path / "seen.json"
    done = run_pytest(tmp_path, "--gpu-isolate=backend", "--benchmark-disable", "--tb=native",
                      "--runslow", "-o", "xfail_strict=true", "-k", "options",
                      f"--junitxml={tmp_path / 'junit.xml'}", timeout=900,
                      extra_env={"SEEN_OUT": str(seen_out),
                                 "PYTEST_ADDOPTS": "--benchmark-min-rounds=7"})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(seen_out.read_text())
    assert seen == {
        "in_worker": True,
        # forwarded: the benchmark options, the traceback style, a conftest's option,
        # the ini override, PYTEST_ADDOPTS, and the ini's addopts once (-v, not -v -v)
        "benchmark_disable": True, "benchmark_min_rounds": 7, "tbstyle": "native",
        "verbose": 1, "runslow": True, "xfail_strict": True,
        # parent-only: the JUnit file is written here, the selection was made here
        "xmlpath": None, "keyword": "",
    }
    assert (tmp_path / "junit.xml").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("args", "line"), [
    (("--gpu-isolate=backend", "--pdb"),
     "--pdb needs --gpu-isolate=none: the debugger would stop in a worker process"),
    (("--gpu-isolate=test", "--log-file=out.log"),
     "--log-file needs --gpu-isolate=none: the log records of tests run in a child process "
     "would not reach the file"),
    (("--gpu-backends=numpy,numba-cudasim", "--gpu-isolate=none", "--trace"),
     "--trace needs a run without numba-cudasim in --gpu-backends"),
])
def test_an_option_that_cannot_reach_a_child_is_one_line_and_exit_4(
        tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    (tmp_path / "test_a.py").write_text("def test_a(gpu_backend):\n    pass\n")
    done = run_pytest(tmp_path, *args, timeout=900)
    assert done.returncode == 4, done.stdout + done.stderr
    errors = [text for text in done.stderr.splitlines() if text.startswith("ERROR:")]
    assert len(errors) == 1, done.stderr
    assert line in errors[0]


@pytest.mark.slow
def test_the_same_option_runs_in_process(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def test_a(gpu_backend):\n    pass\n")
    done = run_pytest(tmp_path, "--gpu-isolate=none", "--pdb", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
