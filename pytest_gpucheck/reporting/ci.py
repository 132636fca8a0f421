"""What a CI page shows of a run: the job summary, annotations, JUnit properties.

* **Job summary.** GitHub Actions renders the Markdown a step appends to the
  file named by ``GITHUB_STEP_SUMMARY``.  When that variable is set and the run has
  items of the plugin's (or ``--gpu-summary=PATH`` asks), the run appends a short
  version of the report:
  the totals, the failures first (id, one-line reason, rerun command), the
  matrix, then the skip reasons, the interop and benchmark sections and the
  versions in collapsed ``<details>``.
* **Annotations.** On GitHub Actions (``GITHUB_ACTIONS=true``, or
  ``--gpu-annotations=on``) each failure of the plugin's items becomes an ``::error``
  workflow command pointing at the code to blame: the implementation the user
  registered, where it was registered, else the test function.  A project's own tests
  (no fixture, marker or suite of the plugin) are pytest's to report: neither the
  summary nor the annotations name them.
* **JUnit properties.** Every item with a matrix cell carries
  ``gpucheck.backend``, ``gpucheck.family``, ``gpucheck.kernel`` and
  ``gpucheck.device`` as ``user_properties``, which ``--junitxml`` writes as
  ``<property>`` elements (the conformance suites add ``gpucheck.seed``).

None of this changes a verdict: a summary that cannot be written is one
warning line, and the run's exit status stays what the tests made it.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gpucheck.options import add_choice_option

# The rerun line's rule lives in reporting/rerun.py (report.py uses it too, and this
# module imports report.py for the job summary); its names stay importable from here.
from pytest_gpucheck.reporting.rerun import (
    ADDED_SUITES_KEY as ADDED_SUITES_KEY,
)
from pytest_gpucheck.reporting.rerun import (
    export_rerun_invocation as export_rerun_invocation,
)
from pytest_gpucheck.reporting.rerun import (
    named_paths as named_paths,
)
from pytest_gpucheck.reporting.rerun import (
    options_for as options_for,
)
from pytest_gpucheck.reporting.rerun import (
    rerun_invocation as rerun_invocation,
)
from pytest_gpucheck.reporting.rerun import (
    rerun_options as rerun_options,
)
from pytest_gpucheck.reporting.rerun import (
    rerun_selector as rerun_selector,
)
from pytest_gpucheck.reporting.rerun import (
    rerun_target as rerun_target,
)
from pytest_gpucheck.reporting.rerun import (
    restore_rerun_invocation as restore_rerun_invocation,
)
from pytest_gpucheck.reporting.rerun import (
    stable_nodeid as stable_nodeid,
)
from pytest_gpucheck.reporting.rerun import (
    target_from_nodeid as target_from_nodeid,
)

if TYPE_CHECKING:
    from pytest_gpucheck.reporting.report import Failure, Matrix

SUMMARY_OPTION = "--gpu-summary"
ANNOTATIONS_OPTION = "--gpu-annotations"
ANNOTATION_CHOICES = ("auto", "on", "off")
#: GitHub shows at most 10 error annotations per step; more would be dropped unseen.
MAX_ANNOTATIONS = 10


def add_options(group: Any) -> None:
    """The CI options, in the ``gpucheck`` group."""
    group.addoption(
        SUMMARY_OPTION,
        dest="gpu_summary",
        default="auto",
        type=summary_value,
        metavar="auto|off|PATH",
        help="append a short Markdown summary (failures first, details collapsed) to PATH "
        "(a path with a '/' or a name ending in .md). auto (default): to "
        "$GITHUB_STEP_SUMMARY when it is set (the GitHub Actions job summary); off: never.",
    )
    add_choice_option(
        group,
        ANNOTATIONS_OPTION,
        ANNOTATION_CHOICES,
        dest="gpu_annotations",
        default="auto",
        help="print each failure as a GitHub Actions ::error annotation at the registered "
        "implementation (or the test). auto (default): when GITHUB_ACTIONS=true.",
    )


def summary_value(text: str) -> str:
    """``--gpu-summary``'s value: ``auto``, ``off`` or something that looks like a path.

    A path has a separator or ends in ``.md``: a bare word (``--gpu-summary=maybe``,
    ``=on``, ``=yes``) is a mistaken keyword, not a file to create in the working folder.
    """
    if text in ("auto", "off") or os.sep in text or "/" in text or text.endswith(".md"):
        return text
    raise pytest.UsageError(
        f"{SUMMARY_OPTION}={text!r} is not valid; use auto, off or a file path (one with a "
        f"'/' or ending in .md), e.g. {SUMMARY_OPTION}=gpucheck-summary.md")


def summary_path(config: pytest.Config) -> Path | None:
    """Where the job summary goes, or None."""
    value = str(config.getoption("gpu_summary", "auto") or "auto")
    if value == "off":
        return None
    if value == "auto":
        value = os.environ.get("GITHUB_STEP_SUMMARY", "")
    return Path(value) if value else None


def asked_for(config: pytest.Config) -> bool:
    """Whether the user asked by option for a summary file (``--gpu-summary=PATH``) or the
    annotations (``--gpu-annotations=on``): then a run without items of the plugin's writes
    them too; ``auto`` (``GITHUB_STEP_SUMMARY``, ``GITHUB_ACTIONS``) is for runs that have
    some, so a project that does not use the plugin gets nothing of it on its CI page."""
    summary = str(config.getoption("gpu_summary", "auto") or "auto")
    return summary not in ("auto", "off") or config.getoption("gpu_annotations", "auto") == "on"


def annotations_wanted(config: pytest.Config) -> bool:
    value = config.getoption("gpu_annotations", "auto")
    if value == "auto":
        return os.environ.get("GITHUB_ACTIONS") == "true"
    return value == "on"


# -- on the item: where to blame, JUnit properties ------------------------------------
def blame_location(item: pytest.Item) -> dict[str, Any]:
    """File and 1-based line of the code a failure of ``item`` points at.

    A conformance item checks an implementation (its parameter has an
    ``implementation`` with a ``func``): that function's definition, where the
    user registered it.  Anything else: the test function.
    """
    callspec = getattr(item, "callspec", None)
    for value in callspec.params.values() if callspec is not None else ():
        func = getattr(getattr(value, "implementation", None), "func", None)
        if func is None:
            continue
        found = _source_of(func)
        if found is not None:
            return found
    line = item.location[1]
    return {"file": str(item.path), "line": (line + 1) if line is not None else 0}


def _source_of(func: Any) -> dict[str, Any] | None:
    # Numba's dispatchers keep the Python function in py_func; functools wrappers
    # (jax.jit and friends) in __wrapped__.
    func = getattr(func, "py_func", func)
    try:
        func = inspect.unwrap(func)
        path = inspect.getsourcefile(func)
        code = getattr(func, "__code__", None)
        line = code.co_firstlineno if code is not None else inspect.getsourcelines(func)[1]
    except (TypeError, OSError, ValueError):
        return None
    return {"file": str(Path(path).resolve()), "line": int(line)} if path else None


def junit_properties(item: pytest.Item, cell: dict[str, str]) -> list[tuple[str, str]]:
    """``gpucheck.*`` properties of an item in the matrix."""
    from pytest_gpucheck.selection import get_selection

    backend = cell.get("backend", "")
    kernel_marker = item.get_closest_marker("gpu_kernel")
    kernel = str(kernel_marker.args[0]) if kernel_marker and kernel_marker.args else ""
    device = ""
    selection = get_selection(item.config)
    if backend in selection.names:
        probe = selection.backend(backend).probe()
        device = probe.device if probe.available else f"unavailable: {probe.reason}"
    properties = [("gpucheck.backend", backend), ("gpucheck.family", cell.get("family", ""))]
    if kernel:
        properties.append(("gpucheck.kernel", kernel))
    properties.append(("gpucheck.device", device))
    return properties


# -- annotations -------------------------------------------------------------------
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def repository_root(config: pytest.Config) -> Path:
    """The checkout annotations are relative to: ``GITHUB_WORKSPACE``, else the rootdir."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    return Path(workspace).resolve() if workspace else Path(config.rootpath).resolve()


def annotation(failure: Failure, root: Path) -> str:
    """One ``::error`` workflow command for ``failure``.

    A file inside the repository gets ``file=`` and ``line=`` (GitHub draws it
    on the pull request's diff); a file outside it (an installed package) cannot
    be linked, so the annotation names it in its text instead.
    """
    title = f"gpucheck: {failure.nodeid}"
    message = f"{failure.reason}\nrerun: {failure.rerun}"
    properties = []
    if failure.file:
        path = Path(failure.file)
        try:
            relative = path.resolve().relative_to(root)
        except ValueError:
            message += f"\n(defined at {path}:{failure.line}, outside the repository {root})"
        else:
            properties += [f"file={_escape_property(relative.as_posix())}",
                           f"line={failure.line}"]
    properties.append(f"title={_escape_property(title)}")
    return f"::error {','.join(properties)}::{_escape_data(message)}"


def annotation_lines(failures: list[Failure], root: Path) -> list[str]:
    lines = [annotation(failure, root) for failure in failures[:MAX_ANNOTATIONS]]
    if len(failures) > MAX_ANNOTATIONS:
        lines.append(f"::warning title=gpucheck::{len(failures) - MAX_ANNOTATIONS} more "
                     "failure(s) not annotated; see the job summary or the report")
    return lines


# -- publishing --------------------------------------------------------------------
def is_rank_other_than_zero() -> bool:
    from pytest_gpucheck.environment import launched_rank

    rank = launched_rank()
    return rank is not None and rank.rank != 0


def publish(config: pytest.Config, terminalreporter: Any, matrix: Matrix,
            order: list[str]) -> None:
    """Append the job summary and print the annotations, as the options ask: in the process
    the user started only (an isolation worker or the simulator child inherits
    ``GITHUB_STEP_SUMMARY`` and appended its own part of the run before the real one)."""
    from pytest_gpucheck.environment import REPORT_SINK_VARIABLE

    if (getattr(config, "workerinput", None) is not None or is_rank_other_than_zero()
            or os.environ.get(REPORT_SINK_VARIABLE)):
        return
    path = summary_path(config)
    if path is not None and (matrix.counts or matrix.failures or matrix.sections):
        from pytest_gpucheck.reporting.report_files import append_job_summary

        try:
            append_job_summary(matrix, path, order)
        except OSError as exc:
            terminalreporter.write_line(
                f"gpucheck: could not append the job summary to {path}: "
                f"{exc.strerror or exc}; the verdict is unchanged, the full report is in "
                "the terminal above (and --gpu-report if given)", yellow=True)
        else:
            terminalreporter.write_line(f"gpucheck: job summary appended to {path}")
    if annotations_wanted(config) and matrix.failures:
        root = repository_root(config)
        for line in annotation_lines(matrix.failures, root):
            terminalreporter.write_line(line)
