"""What the trip tests share: the tracing conftest's walk up the call stack, and the files
a recorded trip entered (tests/processes/test_routed_trip.py,
tests/bench/test_bench_trip.py)."""

from __future__ import annotations

from collections.abc import Sequence

#: A tracing conftest's walk up the call stack (``os`` and ``PACKAGE``, the package's
#: folder, defined before it): the files of the package on the stack, callee first,
#: repeats in a row merged, up to the first hook call (what runs above it is pytest's,
#: or a report's reader).
CHAIN = '''
def _chain(frame):
    files = []
    while frame is not None:
        name = frame.f_code.co_filename
        if os.sep + "pluggy" + os.sep in name:
            break  # a hook call: what runs above it is pytest's, or a report's reader
        if name.startswith(PACKAGE):
            relative = name[len(PACKAGE):]
            if not files or files[-1] != relative:
                files.append(relative)
        frame = frame.f_back
    return files
'''


def trip(chains: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """The files a trip entered (in the order first entered) and those it re-entered:
    a file on one call stack twice, with another file between (control came back into
    it from a file it called)."""
    files: list[str] = []
    reentered: list[str] = []
    for chain in chains:
        for name in reversed(chain):
            if name not in files:
                files.append(name)
        for name in set(chain):
            if chain.count(name) > 1 and name not in reentered:
                reentered.append(name)
    return files, reentered
