"""Context files: read what the person pointed at, cut each to its first 300 lines.

The duel's seed reads every ``--paths`` file and keeps 300 lines of it; a path that cannot be
read is listed as skipped and the debate goes on without it. This is the only part of the
debate request that touches the disk, so it lives here and not in a format.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable
from pathlib import Path

from app.spec import ContextFile

__all__ = ["MAX_CONTEXT_LINES", "cut_context", "read_context_files"]

MAX_CONTEXT_LINES = 300
# A NUL byte in the first block means a binary file: nothing a debater could read.
_SNIFF_BYTES = 8192


def _cut(path: str, lines: Iterable[str], max_lines: int) -> ContextFile:
    iterator = iter(lines)
    head = list(itertools.islice(iterator, max_lines))
    rest = sum(1 for _ in iterator)
    return ContextFile(
        path=path, text="".join(head), total_lines=len(head) + rest, truncated=rest > 0
    )


def cut_context(path: str, text: str, *, max_lines: int = MAX_CONTEXT_LINES) -> ContextFile:
    """``text`` cut to its first ``max_lines`` lines, remembering how many it had."""
    # StringIO with newline="" splits lines exactly as reading the file does.
    return _cut(path, io.StringIO(text, newline=""), max_lines)


def _read(path: str, max_lines: int) -> ContextFile | None:
    file = Path(path).expanduser()
    try:
        with file.open("rb") as raw:
            if b"\0" in raw.read(_SNIFF_BYTES):
                return None
        # Streamed, so a huge log costs a line count, not its size in memory.
        with file.open(encoding="utf-8", errors="replace", newline="") as handle:
            return _cut(path, handle, max_lines)
    except (OSError, ValueError):
        return None


def read_context_files(
    paths: Iterable[str], *, max_lines: int = MAX_CONTEXT_LINES
) -> tuple[tuple[ContextFile, ...], tuple[str, ...]]:
    """(the files that could be read, cut; the paths that could not), in the given order.

    Blank entries (``"a.py,,b.py"``) are ignored. Missing files, folders, unreadable and
    binary files are skipped, never an error.
    """
    files: list[ContextFile] = []
    skipped: list[str] = []
    for entry in paths:
        path = entry.strip()
        if not path:
            continue
        read = _read(path, max_lines)
        if read is None:
            skipped.append(path)
        else:
            files.append(read)
    return tuple(files), tuple(skipped)
