"""Work too heavy for the event loop, done in worker threads of its own, a few at a time.

Rendering a large debate page, or encoding a long replay of events, takes tens of
milliseconds or more. On the loop, every other request (``/healthz`` included) waits that
long, and a few hundred such fetches at once held it for seconds. Here the work runs in a
small pool of its own (``app.threads``): the loop stays free to answer, and a burst queues
for the pool instead of taking the threads the rest of the app uses.
"""

from __future__ import annotations

from app.threads import Lane

HEAVY_WORK_THREADS = 2

_heavy = Lane("heavy", threads=HEAVY_WORK_THREADS)

off_loop = _heavy.run
