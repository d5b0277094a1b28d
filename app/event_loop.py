"""The event loop Argue's own long-running processes run on: uvloop where it is installed
(``uvicorn[standard]`` brings it, and uvicorn picks it for the web process), asyncio's own
loop elsewhere (Windows).

A worker process streams every token of dozens of debates through its loop: its sockets,
timers and task switches cost a good deal less on uvloop than on asyncio's pure-Python
selector loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the fastest loop at hand."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
