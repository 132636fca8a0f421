"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

Reports and benchmark baselines are written through here, so a run killed
mid-write (or two xdist workers writing at once) loses nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file private (0600); give it the usual permissions.
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (its folder made first) so a reader never sees a
    partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)
