"""How the server, its provider worker and ``argue worker`` keep Python's garbage collector
from pausing live streams.

Hundreds of concurrent streams keep a few hundred thousand container objects alive
(coroutines, tasks, buffers, the event logs). Every full collection walks all of them: at 200
running duels that was a pause of 100–200 ms every ten seconds or so, long enough to set the
99th percentile of token-to-viewer latency by itself. Almost none of it is garbage: the
objects are freed by reference counting when their stream ends, and a full collection finds
a few dozen objects in cycles.

So the server freezes what has survived (``gc.freeze``: the collector no longer walks it,
reference counting still frees it) once a second, which leaves the collector only the last
second's objects to look at, and runs one real full collection every few minutes to reclaim
the rare cycles that were frozen.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

FREEZE_EVERY_SECONDS = 1.0
FULL_COLLECTION_EVERY_SECONDS = 600.0
# Young collections after this many new objects instead of 700: most of a stream's objects
# die young, and fewer, larger young collections cost less in all.
YOUNG_THRESHOLD = 50_000


def tune_at_start() -> None:
    """Collect the start-up garbage, freeze what remains (modules, templates, SDK clients),
    and make young collections rarer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 20, 50)


@dataclass
class CollectorSchedule:
    """Freeze survivors every ``freeze_every`` seconds; unfreeze and collect everything
    every ``full_every`` seconds."""

    freeze_every: float = FREEZE_EVERY_SECONDS
    full_every: float = FULL_COLLECTION_EVERY_SECONDS
    clock: Callable[[], float] = time.monotonic
    _next_full: float | None = field(default=None, init=False)

    def tick(self) -> int | None:
        """One step of the schedule; the objects a full collection freed, if one ran."""
        now = self.clock()
        if self._next_full is None:
            self._next_full = now + self.full_every
        if now < self._next_full:
            gc.freeze()
            return None
        self._next_full = now + self.full_every
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        return freed

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.freeze_every)
            self.tick()


@contextlib.asynccontextmanager
async def pauses_kept_short() -> AsyncIterator[None]:
    """For a process's serving life: tuned at the start, then the schedule in the background
    until the block ends."""
    tune_at_start()
    schedule = asyncio.create_task(CollectorSchedule().run())
    try:
        yield
    finally:
        schedule.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await schedule
