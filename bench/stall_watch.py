"""What watching a stream for stalls costs per event: ``python -m bench.stall_watch``.

Every provider event (one a token, for the streams that send one token per event) passes
through ``app.providers.resilience.guard_stalls``. This times a stream of ready events read
three ways, on the loop the app runs on: bare, through an ``asyncio.timeout`` around each wait
(how ``guard_stalls`` watched before), and through ``guard_stalls`` as it is. It prints the
microseconds per event of each, the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from app import event_loop
from app.providers.base import Finished, TextDelta
from app.providers.resilience import guard_stalls

STALL_AFTER = 60.0
Event = TextDelta | Finished
Wrap = Callable[[AsyncIterator[TextDelta]], AsyncIterator[Event]]


async def ready_events(count: int) -> AsyncGenerator[TextDelta, None]:
    delta = TextDelta("token")
    for _ in range(count):
        yield delta


async def bare(stream: AsyncIterator[TextDelta]) -> AsyncGenerator[TextDelta, None]:
    async for event in stream:
        yield event


async def timeout_per_wait(stream: AsyncIterator[TextDelta]) -> AsyncGenerator[TextDelta, None]:
    while True:
        try:
            async with asyncio.timeout(STALL_AFTER):
                event = await anext(stream)
        except StopAsyncIteration:
            return
        yield event


def watched(stream: AsyncIterator[TextDelta]) -> AsyncIterator[Event]:
    return guard_stalls(stream, stall_after=STALL_AFTER, provider="bench")


async def microseconds_per_event(wrap: Wrap, count: int) -> float:
    started = time.perf_counter()
    async for _ in wrap(ready_events(count)):
        pass
    return (time.perf_counter() - started) / count * 1e6


async def measure(count: int, repeats: int) -> dict[str, float]:
    ways: dict[str, Wrap] = {
        "bare": bare,
        "asyncio.timeout per wait": timeout_per_wait,
        "guard_stalls": watched,
    }
    best = {name: float("inf") for name in ways}
    for _ in range(repeats):
        for name, wrap in ways.items():
            best[name] = min(best[name], await microseconds_per_event(wrap, count))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000, help="events per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (best is kept)")
    args = parser.parse_args()
    best = event_loop.run(measure(args.events, args.repeats))
    for name, micros in best.items():
        extra = micros - best["bare"]
        print(f"{name:<26} {micros:6.2f} µs/event  ({extra:+.2f} over bare)")


if __name__ == "__main__":
    main()
