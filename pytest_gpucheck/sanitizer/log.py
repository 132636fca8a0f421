"""compute-sanitizer's log: its records, the findings among them, and which part of a
sanitized worker's log no test has read yet.

Kept apart from :mod:`pytest_gpucheck.sanitizer.plugin` (the plugin) and
:mod:`pytest_gpucheck.sanitizer.router` (the parent's worker) so both read one
format.  A sanitized worker logs to ``LOG`` (``--log-file``); after each test it
writes how far the tests read into ``LOG.read`` and what the sanitizer logged
before the first test (start-up, collection) into ``LOG.outside``.
"""

from __future__ import annotations

from pathlib import Path

#: The report section of a test with sanitizer errors (``gpucheck sanitizer (TOOL)``).
SECTION = "gpucheck sanitizer"
PREFIX = "========="
#: Records of the log that are not findings: the banner, the summaries, and the
#: application's exit status (switched off with ``--check-exit-code no``; pytest exits
#: 1 whenever a test fails).
NOT_ERRORS = ("COMPUTE-SANITIZER", "ERROR SUMMARY:", "RACECHECK SUMMARY:",
              "LEAK SUMMARY:", "Error: process didn't terminate successfully",
              "Target application returned an error")


def records(text: str) -> list[list[str]]:
    """The sanitizer's records in ``text``, each a list of lines without the prefix.

    Format (compute-sanitizer's documentation, "memcheck_demo Output with Memcheck",
    2026.4): a record's first line is the prefix, one space and its headline; the next
    lines are indented further under the same prefix; a bare prefix ends it::

        ========= Invalid __global__ write of size 4 bytes
        =========     at unaligned_kernel()+0x100 in memcheck_demo.cu:34
        =========     by thread (0,0,0) in block (0,0,0)
        =========     Address 0x7cc43aa00001 is misaligned
        =========
    """
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            current = None  # not the sanitizer's (the application's own output)
            continue
        body = line[len(PREFIX):].rstrip()
        if not body.strip():
            current = None  # the bare prefix that ends a record
        elif current is None or not body.startswith("  "):
            current = [body.strip()]  # a headline: one space after the prefix
            found.append(current)
        else:
            current.append(body[1:])  # an indented line of the current record
    return found


#: The headline of a record about a CUDA API call that failed ("Program hit
#: CUDA_ERROR_LAUNCH_FAILED (error 719) ... on CUDA API call to cuCtxSynchronize"): after
#: a device error the sanitizer stops the kernel, and every later call on the context
#: fails with such a record (seen on an H200, 2026-11-27).
API_ERROR = "Program hit "


#: Failed API calls that are no finding: cuda-bindings asks the driver for each entry
#: point by name (``cuGetProcAddress``), also for ones this driver does not have, and
#: handles the refusal.  On an H200 (2026-11-27, cuda-bindings 13.3, driver 580) each
#: sanitized numba-cuda and CuPy worker logged dozens of these at start-up, and the run
#: failed with "errors outside any test" on correct code.
HANDLED_API_ERRORS = ("on CUDA API call to cuGetProcAddress",)


def _finding(record: list[str]) -> bool:
    headline = record[0]
    if headline.startswith(NOT_ERRORS):
        return False
    return not (headline.startswith(API_ERROR)
                and any(call in headline for call in HANDLED_API_ERRORS))


def errors(text: str) -> list[list[str]]:
    """The records of ``text`` that are findings (not the banner, a summary, or a failed
    call its caller handles)."""
    return [record for record in records(text) if _finding(record)]


def device_errors(found: list[list[str]]) -> list[list[str]]:
    """The findings in the kernels themselves (not failed API calls)."""
    return [record for record in found if not record[0].startswith(API_ERROR)]


def _thread(line: str) -> bool:
    return line.strip().startswith("by thread")


def error_text(text: str, *, lines_per_error: int = 12) -> str:
    """The findings of ``text`` as a report section: each record's first lines (kind,
    kernel, thread and block, address, the start of the trace).  Records that differ
    only in their thread (a barrier error reported by each thread of a warp) are shown
    once, with how many threads reported it."""
    groups: dict[tuple[str, ...], list[list[str]]] = {}
    for record in errors(text):
        groups.setdefault(tuple(line for line in record if not _thread(line)), []).append(
            record)
    shown = []
    for same in groups.values():
        record = same[0]
        body = record[:lines_per_error]
        if len(record) > lines_per_error:
            body.append(f"    ... {len(record) - lines_per_error} more lines")
        if len(same) > 1:
            body.append(f"    (the same error in {len(same) - 1} more thread(s))")
        shown.append("\n".join(body))
    return "\n\n".join(shown)


def read_mark(log: Path) -> Path:
    """``LOG.read``: how many bytes of ``log`` the worker's tests have read."""
    return log.with_name(log.name + ".read")


def outside_mark(log: Path) -> Path:
    """``LOG.outside``: what the sanitizer logged before the worker's first test."""
    return log.with_name(log.name + ".outside")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def unread_part(log: Path) -> str:
    """What the sanitizer logged outside the worker's tests: before its first test, and
    after the last part a test read (session teardown, interpreter exit, a crash)."""
    try:
        offset = int(_read(read_mark(log)).strip() or 0)
    except ValueError:
        offset = 0
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        tail = ""
    return _read(outside_mark(log)) + tail


__all__ = ["API_ERROR", "SECTION", "device_errors", "error_text", "errors", "outside_mark",
           "read_mark", "records", "unread_part"]
