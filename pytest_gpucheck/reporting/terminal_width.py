"""Lines the plugin prints, fitted to the terminal's width.

pytest's terminal writer knows the width (``COLUMNS``, the tty's, else 80);
a line wider than that wraps in the terminal wherever the terminal likes, and
the next line's columns no longer start where they should.  Tables are split by
their own code (the conformance matrix); every other line goes through
:func:`fit`.
"""

from __future__ import annotations

import pytest


def terminal_width(config: pytest.Config) -> int | None:
    """The width of pytest's terminal, or None without a terminal reporter
    (``-p no:terminal``: then nothing is printed to fit)."""
    if config.pluginmanager.get_plugin("terminalreporter") is None:
        return None
    width = config.get_terminal_writer().fullwidth
    return width if isinstance(width, int) and width > 0 else None


def fit(line: str, width: int | None) -> str:
    """``line`` wrapped at ``width`` (None: as is), its continuation lines indented two
    columns more than the line (at least four), so they read as one item.  A word
    longer than the width (a URL) is split, as the terminal would split it anyway.

    >>> print(fit("gpucheck: 71 pass, 35 n/a (items in the matrix's cells)", 30))
    gpucheck: 71 pass, 35 n/a
        (items in the matrix's
        cells)
    """
    if width is None or len(line) <= width:
        return line
    import textwrap

    lead = len(line) - len(line.lstrip(" "))
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=" " * max(4, lead + 2),
                                   break_on_hyphens=False))
