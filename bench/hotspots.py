"""Reading a py-spy profile (``--format raw``: one collapsed stack per line, then its sample
count) into the functions that cost the most: by own time and by time including callees."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

_SCAFFOLD = (
    "<frozen runpy>",
    "click/core.py",
    "uvicorn/main.py",
    "uvicorn/__main__.py",
    "uvicorn/server.py",
    "uvicorn/_compat.py",
    "runners.py",
    "threading.py",
)


def _frames(stack: str) -> list[str]:
    return [frame.strip() for frame in stack.split(";") if frame.strip()]


def _short(frame: str) -> str:
    """``handle (/usr/lib/python3.11/site-packages/x/y.py:12)`` → ``handle (x/y.py:12)``."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})" if where else name


def _without_line(frame: str) -> str:
    """The function, not the line: samples of one function at many lines add up."""
    head, _, _line = frame.rpartition(":")
    return head + ")" if head and frame.endswith(")") else frame


def summarize(path: Path, *, top: int = 25) -> dict[str, Any]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    files: Counter[str] = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(_without_line(f)) for f in _frames(stack)]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
        for where in {f.partition(" (")[2].split(":")[0].rstrip(")") for f in frames}:
            files[where] += count

    def share(counter: Counter[str], *, skip_scaffold: bool = True) -> list[dict[str, Any]]:
        # The frames every sample sits under (start-up, the server's main loop) say nothing.
        return [
            {"function": name, "percent": round(100 * n / total, 1)}
            for name, n in counter.most_common()
            if not (skip_scaffold and any(marker in name for marker in _SCAFFOLD))
        ][:top]

    return {
        "samples": total,
        # Own time in the loop's runner is the event loop's C code (uvloop: I/O, scheduling).
        "own_time": share(own, skip_scaffold=False),
        "inclusive_time": share(inclusive),
        "by_file": share(files),
    }
