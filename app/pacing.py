"""Spacing work out on the event loop: something that happens again and again (a send, a
read, a flush of live text) begins no sooner than a set time after it last began, so that
each time it carries everything of the interval instead of one item. The first after a
quiet spell goes at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Spacing:
    """When the next of a recurring piece of work may begin: ``seconds`` after the last one
    began (``begin``), on the running loop's clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = float("-inf")

    def begin(self) -> None:
        """One begins now."""
        self._last = asyncio.get_running_loop().time()

    def left(self) -> float:
        """Seconds until the next may begin (none left when zero or less)."""
        return self._last + self.seconds - asyncio.get_running_loop().time()

    async def wait(self) -> None:
        """Until the next may begin."""
        left = self.left()
        if left > 0:
            await asyncio.sleep(left)

    def call(self, callback: Callable[[], object]) -> asyncio.Handle:
        """Have the loop run ``callback`` as soon as the next may begin."""
        loop = asyncio.get_running_loop()
        left = self.left()
        return loop.call_later(left, callback) if left > 0 else loop.call_soon(callback)
