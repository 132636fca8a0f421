"""Command-line and ini options of the core plugin, and their validation.

Validators raise :class:`pytest.UsageError` with one line that names the valid
values or the fix, so pytest exits with code 4 and no traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_gpucheck.backends import BACKENDS, GROUPS

BACKENDS_OPTION = "--gpu-backends"
BACKENDS_INI = "gpu_backends"
REQUIRE_OPTION = "--gpu-require"
DEVICE_OPTION = "--gpu-device"
REPORT_OPTION = "--gpu-report"
CONFORMANCE_OPTION = "--gpu-conformance"
IMPLS_OPTION = "--gpu-impls"

DEFAULT_BACKENDS = "numpy"
IMPL_ORIGINS = ("all", "bundled", "user")
REPORT_SUFFIXES = (".json", ".md")


def add_options(parser: pytest.Parser) -> None:
    """Register the core options in the ``gpucheck`` group."""
    group = parser.getgroup("gpucheck", "GPU kernel checks (pytest-gpucheck)")
    group.addoption(
        BACKENDS_OPTION,
        dest="gpu_backends",
        default=None,
        metavar="SPEC",
        help="backends to run: all, cpu, gpu, or NAME[,NAME...] from "
        f"{', '.join(BACKENDS)}. Groups run what is available and skip the rest with the "
        f"reason; a named backend must be available. Default: ini {BACKENDS_INI} or "
        f"{DEFAULT_BACKENDS}.",
    )
    group.addoption(
        REQUIRE_OPTION,
        dest="gpu_require",
        default=None,
        metavar="SPEC",
        help="fail the run (exit 4) unless these are available: 'gpu' (at least one GPU "
        "backend on a visible CUDA device) or NAME[,NAME...]. For GPU CI runners, so a "
        "lost GPU fails instead of passing on skips.",
    )
    group.addoption(
        DEVICE_OPTION,
        dest="gpu_device",
        default="auto",
        metavar="auto|N",
        help="CUDA device index (within CUDA_VISIBLE_DEVICES). auto: the node-local MPI rank "
        "or pytest-xdist worker number, round robin over visible devices; else 0.",
    )
    group.addoption(
        REPORT_OPTION,
        dest="gpu_report",
        default=None,
        metavar="PATH",
        help="write the conformance matrix to PATH: .json, or .md (fits a CI job summary).",
    )
    group.addoption(
        CONFORMANCE_OPTION,
        dest="gpu_conformance",
        action="store_true",
        default=False,
        help="also collect the bundled conformance suites (checks every registered "
        "implementation, including the ones your conftest.py registers).",
    )
    add_choice_option(
        group,
        IMPLS_OPTION,
        IMPL_ORIGINS,
        dest="gpu_impls",
        default="all",
        help="which implementations the conformance suites check: all (default), bundled, "
        "or user (only those registered with pytest_gpucheck.implements).",
    )
    parser.addini(
        BACKENDS_INI,
        help=f"default for {BACKENDS_OPTION} (all, cpu, gpu or NAME[,NAME...])",
        default=DEFAULT_BACKENDS,
    )


def add_choice_option(group: pytest.OptionGroup, option: str, values: Sequence[str],
                      **kwargs: Any) -> None:
    """Add ``option``, which takes one of ``values``, to ``group``: checked by
    :func:`one_of` and shown in ``--help`` as ``a|b|c``; ``kwargs`` are argparse's other
    arguments (``dest``, ``default``, ``help``)."""
    group.addoption(option, type=one_of(option, values), metavar="|".join(values), **kwargs)


def one_of(option: str, values: Sequence[str]) -> Callable[[str], str]:
    """An argparse ``type`` for an option that takes one of ``values``.

    Used instead of argparse's ``choices``, whose error is three lines (the usage,
    argparse's message, the ini file and rootdir): a value outside ``values`` raises
    :class:`pytest.UsageError` with one line naming the valid ones (argparse lets an
    exception other than ``ValueError``/``TypeError`` through to pytest, which prints
    ``ERROR: ...`` and exits with code 4).
    """
    def check(text: str) -> str:
        if text not in values:
            valid = f"{', '.join(values[:-1])} or {values[-1]}"
            raise pytest.UsageError(f"{option}={text!r} is not valid; use {valid}, "
                                    f"e.g. {option}={values[0]}")
        return text

    return check


@dataclass(frozen=True)
class BackendSpec:
    """A parsed ``--gpu-backends`` value: the names it selects and which were explicit."""

    names: tuple[str, ...]
    explicit: frozenset[str]
    text: str


def _valid_values() -> str:
    return f"{', '.join(GROUPS)} or a comma-separated list of {', '.join(BACKENDS)}"


def parse_backend_spec(text: str, option: str = BACKENDS_OPTION) -> BackendSpec:
    """Parse ``all|cpu|gpu|NAME[,NAME...]``; groups and names may be mixed.

    Raises :class:`pytest.UsageError` for an empty value, spaces, stray commas,
    unknown names and duplicates.
    """
    if not text or not text.strip():
        raise pytest.UsageError(f"{option} is empty; use {_valid_values()}")
    if any(ch.isspace() for ch in text):
        raise pytest.UsageError(
            f"{option}={text!r} contains spaces; write the list without them, e.g. numpy,torch-cpu"
        )
    parts = text.split(",")
    if any(part == "" for part in parts):
        raise pytest.UsageError(
            f"{option}={text!r} has a stray comma; write NAME[,NAME...], e.g. numpy,torch-cpu"
        )
    names: list[str] = []
    explicit: set[str] = set()
    for part in parts:
        if part in GROUPS:
            members = GROUPS[part]
        elif part in BACKENDS:
            members = (part,)
            explicit.add(part)
        else:
            raise pytest.UsageError(
                f"{option}: unknown backend or group {part!r}; valid values: {_valid_values()}"
            )
        names.extend(name for name in members if name not in names)
    return BackendSpec(tuple(names), frozenset(explicit), text)


def selected_names(config: pytest.Config) -> tuple[str, ...]:
    """The backends ``--gpu-backends`` (or the ini key) names, read without probing any;
    empty for a bad value (the core's configure reports it)."""
    text = config.getoption("gpu_backends") or str(config.getini(BACKENDS_INI))
    try:
        return parse_backend_spec(text).names
    except pytest.UsageError:
        return ()


def parse_require_spec(text: str) -> tuple[bool, tuple[str, ...]]:
    """Parse ``--gpu-require``: (needs a GPU?, backends that must be available)."""
    spec = parse_backend_spec(text, REQUIRE_OPTION)
    needs_gpu = "gpu" in text.split(",")
    return needs_gpu, tuple(sorted(spec.explicit, key=list(BACKENDS).index))


def check_report_path(path: str | None) -> None:
    """``--gpu-report`` must end in .json or .md and be writable, checked before collection
    (a report that cannot be written at the end would lose the run's summary)."""
    if path is None:
        return
    import tempfile
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise pytest.UsageError(f"{REPORT_OPTION}={path!r} is a directory; give a file path in "
                                f"it, e.g. {REPORT_OPTION}={target / 'gpucheck-report.md'}")
    if not path.endswith(REPORT_SUFFIXES):
        raise pytest.UsageError(
            f"{REPORT_OPTION}={path!r}: the file name must end in .json or .md (for the "
            "GitHub job summary give no option: $GITHUB_STEP_SUMMARY is appended to "
            "automatically; elsewhere use --gpu-summary=PATH)"
        )
    # Missing folders are created when the report is written; the nearest one that
    # exists must be a folder this process can write in.
    folder = target.parent.absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise pytest.UsageError(f"{REPORT_OPTION}={path!r}: {folder} is a file, not a folder; "
                                "choose another path")
    try:
        # The report is written atomically: a temporary file beside it, then renamed.
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".gpucheck-report-check-"):
            pass
    except OSError as exc:
        raise pytest.UsageError(f"{REPORT_OPTION}={path!r}: cannot write in {folder} "
                                f"({exc.strerror or exc}); choose a writable folder") from None
