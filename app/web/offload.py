"""Work too heavy for the event loop, done in worker threads of its own, a few at a time.

Rendering a large debate page, or encoding a long replay of events, takes tens of
milliseconds or more. On the loop, every other request (``/healthz`` included) waits that
long, and a few hundred such fetches at once held it for seconds. Here the work runs in a
small pool of its own: the loop stays free to answer, and a burst queues for the pool instead
of taking the threads the rest of the app uses. Two threads: the work is Python holding the
interpreter lock, so more would not finish sooner, only leave the loop less of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import ParamSpec, TypeVar

HEAVY_WORK_THREADS = 2

P = ParamSpec("P")
T = TypeVar("T")

_pool = ThreadPoolExecutor(max_workers=HEAVY_WORK_THREADS, thread_name_prefix="argue-heavy")


async def off_loop(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` in the pool; a caller cancelled before it starts drops it."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool, partial(work, *args, **kwargs))
