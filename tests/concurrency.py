"""Watching a function from the inside: how many of its calls ran at once, in which threads,
and how many on a running event loop (work that should have gone to a thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any


class Concurrency:
    """How many calls of a function ran at once, at most, and in which threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self.most = 0
        self.threads: set[str] = set()
        self.on_loop = 0

    def wrap(self, work: Callable[..., Any], *, hold: float = 0.0) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._running += 1
                self.most = max(self.most, self._running)
                self.threads.add(threading.current_thread().name)
                self.on_loop += _loop_running()
            try:
                time.sleep(hold)
                return work(*args, **kwargs)
            finally:
                with self._lock:
                    self._running -= 1

        return wrapped


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
