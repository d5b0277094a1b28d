"""Work too heavy for the event loop, done in worker threads of its own, a few at a time.

Rendering a large debate page, or encoding a long replay of events, takes tens of
milliseconds or more. On the loop, every other request (``/healthz`` included) waits that
long, and a few hundred such fetches at once held it for seconds. Here the work runs in a
small pool of its own (``app.threads``): the loop stays free to answer, and a burst queues
for the pool instead of taking the threads the rest of the app uses.

An ended debate's final page (the whole debate read back and rendered) has a thread of its
own. Debates that start together end together: when fifty ended at once, their final pages
filled the pool for most of a second, and the first fragments of the debates starting in
that second, what their viewers wait on, queued behind them. Alternate runs of ``python -m
bench --cluster 1 --no-profile --only latency --stream-tap``, four each: the p99 of the
worst second 446, 256, 282 and 279 ms with the thread of its own, 937, 818, 606 and 750 ms
without.

Both lanes, like the ledger's, run below the event loop's priority (``app.threads``): in a
turnover the cores are full, and the live text is what must not wait.
"""

from __future__ import annotations

from app.threads import BACKGROUND_NICENESS, Lane

HEAVY_WORK_THREADS = 2
FINAL_PAGE_THREADS = 1

_heavy = Lane("heavy", threads=HEAVY_WORK_THREADS, niceness=BACKGROUND_NICENESS)
_final_pages = Lane("final-pages", threads=FINAL_PAGE_THREADS, niceness=BACKGROUND_NICENESS)

off_loop = _heavy.run
final_page_off_loop = _final_pages.run


def start_threads() -> None:
    """Start both lanes' threads (``Lane.start``), as the app starts."""
    _heavy.start()
    _final_pages.start()
