"""The app's own small thread pools, one per kind of blocking work, and how many threads the
web framework may run handlers in.

Blocking work (SQLite, rendering) runs in threads so the event loop never waits on it, but
Python code in a thread holds the interpreter lock just as the loop does: every thread
running at once takes its share of the lock from the loop that streams every debate. With
the defaults (forty threads for the framework's handlers, six for ``asyncio.to_thread``),
fifty debates ending and fifty starting within a second ran dozens of threads at once, and
the loop got a small share of the lock for as long as the burst lasted: tokens waited for it.
Each kind of work therefore gets a few threads (a burst queues for them instead), more of
which would not finish the work sooner on one interpreter lock, only take the loop's turn.

The lanes whose work no live text waits on (the ledger's saves, page rendering) also run at
a lower priority than the loop (``BACKGROUND_NICENESS``): in the second when fifty debates
end and fifty start the cores are full, and the scheduler then runs the loop first. Six
alternate runs each of ``python -m bench --cluster 1 --compare --no-profile --only latency
--history-debates 0``: the cluster's token-to-viewer p99 86–133 ms (median 92) lowered,
100–132 ms (median 109) not; in-process 58–59 ms against 59–63 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import ParamSpec, TypeVar

import anyio.to_thread

# Starting a lane's threads waits at most this long for them to run.
START_SECONDS = 10.0

# How long a thread running Python keeps the interpreter lock while another waits for it
# (CPython's default is 5 ms).
THREAD_SWITCH_SECONDS = 0.001

# The framework's threads (FastAPI's plain ``def`` handlers and dependencies, and
# ``run_in_threadpool``): enough for a few page loads and stream openings at once while one
# of them waits on the database.
REQUEST_THREADS = 4

# The background lanes' threads run this many steps of ``nice`` below the event loop: when
# the cores are full, the scheduler gives the loop, which carries every debate's live text,
# the CPU first. A thread's nice value goes from -20 to 19.
BACKGROUND_NICENESS = 10
MOST_NICE = 19

P = ParamSpec("P")
T = TypeVar("T")


class Lane:
    """A few threads of their own for one kind of work; a caller cancelled before its work
    starts drops it. Work that no live text waits on (saving turns, rendering whole pages)
    runs in lanes ``niceness`` steps below the loop's priority."""

    def __init__(self, name: str, *, threads: int, niceness: int = 0) -> None:
        self._threads = threads
        self._pool = ThreadPoolExecutor(
            max_workers=threads,
            thread_name_prefix=f"argue-{name}",
            initializer=_lower_priority,
            initargs=(niceness,),
        )

    def start(self) -> None:
        """Start every thread of the lane now, at start-up, and wait until they all run.

        A pool starts a thread when work finds none idle, and the caller, the event loop,
        waits until the new thread runs: a burst of work on a busy machine (twenty-five
        debates ending and as many starting) held a worker's loop, and every debate's live
        text with it, for 85 ms while its threads were started (``py-spy`` of ``argue worker``
        in ``python -m bench --cluster 1 --only latency --latency-debates 25``)."""
        every_thread_runs = threading.Barrier(self._threads + 1, timeout=START_SECONDS)
        for _ in range(self._threads):
            self._pool.submit(_meet, every_thread_runs)
        _meet(every_thread_runs)

    async def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, partial(work, *args, **kwargs))


def _lower_priority(niceness: int) -> None:
    """Run this thread ``niceness`` steps below the thread that started it (Linux sets a
    thread's nice value on its own; elsewhere this does nothing)."""
    if not niceness or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        lowered = min(os.getpriority(os.PRIO_PROCESS, thread) + niceness, MOST_NICE)
        os.setpriority(os.PRIO_PROCESS, thread, lowered)


def _meet(barrier: threading.Barrier) -> None:
    # Each of the lane's threads holds one of these until all of them (and the caller) do;
    # a lane busy past the timeout starts the rest of its threads later, as it would have.
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait()


def limit_request_threads(threads: int = REQUEST_THREADS) -> None:
    """Cap the threads this event loop's framework runs handlers in (anyio's default limiter,
    forty unless set: one per loop, so this is called from inside the loop)."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = threads


def shorten_thread_switches() -> None:
    """Have a thread running Python hand the interpreter lock on after a millisecond.

    A process that streams debates on its event loop runs its database work (and, in the web
    process, page handlers and rendering) in threads. With CPython's default 5 ms switch
    interval, a busy thread keeps the loop, and every stream it serves, waiting that long
    at each turn: in the web process, at 1 ms the history page's p99 under four concurrent
    clients fell from about 73 to 48 ms (interleaved runs), streaming unchanged. An ``argue
    worker`` is built the same way: at a turnover its ledger and lease threads are busy
    together while the loop publishes every debate's live text."""
    sys.setswitchinterval(THREAD_SWITCH_SECONDS)
