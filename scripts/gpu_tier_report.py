"""pytest plugin for ``scripts/run_gpu_tier.sh``: the Markdown twin of ``--gpu-report=X.json``.

``--gpu-report`` writes one file; the GPU run keeps both formats, and both
must come from the same run (a second run would draw other hypothesis
examples and could meet other failures).  Loaded with ``-p gpu_tier_report``
(``scripts/`` on ``PYTHONPATH``), it writes ``X.md`` beside ``X.json`` after
the core has written the JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> Any:
    # A wrapper: after every other summary, the core's included (itself trylast, it fills
    # in the run's facts and writes the JSON), so the twin holds what the JSON holds.
    result = yield
    _write_twin(terminalreporter, config)
    return result


def _write_twin(terminalreporter: Any, config: pytest.Config) -> None:
    from pytest_gpucheck.backends import BACKENDS
    from pytest_gpucheck.reporting.report import get_matrix
    from pytest_gpucheck.reporting.report_files import write_report
    from pytest_gpucheck.selection import get_selection

    path = config.getoption("gpu_report")
    if not path or not path.endswith(".json") or get_selection(config).in_simulator_child:
        return
    markdown = Path(path).with_suffix(".md")
    write_report(get_matrix(config), markdown, list(BACKENDS))
    terminalreporter.write_line(f"gpucheck: report written to {markdown}")
