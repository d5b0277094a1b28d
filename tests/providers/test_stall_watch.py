"""guard_stalls: only the time spent waiting for the next event counts towards a stall; a
stall is a retryable timeout and closes the stream; a cancel from outside stays a cancel; and
a steady stream costs no timer per event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import pytest

from app.providers.base import ErrorKind, Finished, ProviderError, TextDelta
from app.providers.resilience import guard_stalls

STALL_AFTER = 0.2


class Paced:
    """A stream of ``count`` deltas, each after ``gap`` seconds; remembers being closed."""

    def __init__(self, count: int, gap: float) -> None:
        self.count = count
        self.gap = gap
        self.closed = False

    async def events(self) -> AsyncGenerator[TextDelta, None]:
        try:
            for index in range(self.count):
                if self.gap:
                    await asyncio.sleep(self.gap)
                yield TextDelta(str(index))
        finally:
            self.closed = True


def watched(stream: AsyncIterator[TextDelta]) -> AsyncGenerator[TextDelta | Finished, None]:
    return guard_stalls(stream, stall_after=STALL_AFTER, provider="openai")


async def test_a_consumer_slower_than_the_stall_limit_is_not_a_stall() -> None:
    source = Paced(count=3, gap=0)
    received = []
    async for event in watched(source.events()):
        received.append(event)
        await asyncio.sleep(STALL_AFTER * 2)  # between events: not waiting on the stream

    assert [e.text for e in received if isinstance(e, TextDelta)] == ["0", "1", "2"]


async def test_events_each_within_the_limit_go_on_past_it_in_total() -> None:
    source = Paced(count=6, gap=STALL_AFTER * 0.6)

    received = [event async for event in watched(source.events())]

    assert len(received) == 6  # 0.72 s in all, each wait 0.12 s


async def test_a_wait_longer_than_the_limit_is_a_retryable_timeout_and_closes_the_stream() -> None:
    source = Paced(count=3, gap=STALL_AFTER * 3)
    loop = asyncio.get_running_loop()
    started = loop.time()

    with pytest.raises(ProviderError) as caught:
        async for _ in watched(source.events()):
            pass

    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.TIMEOUT, True)
    assert "stalled" in caught.value.message
    assert STALL_AFTER <= loop.time() - started < STALL_AFTER * 3
    assert source.closed
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the watch took its cancel back


async def test_a_cancel_from_outside_during_a_wait_stays_a_cancel() -> None:
    source = Paced(count=3, gap=STALL_AFTER * 3)

    async def read() -> None:
        async for _ in watched(source.events()):
            pass

    reader = asyncio.ensure_future(read())
    await asyncio.sleep(STALL_AFTER / 4)
    reader.cancel()

    with pytest.raises(asyncio.CancelledError):
        await reader
    assert source.closed


async def test_a_steady_stream_arms_one_timer_not_one_per_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counting_call_at(
        when: float, callback: Callable[..., object], *args: object
    ) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, callback, *args)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    source = Paced(count=1000, gap=0)

    received = [event async for event in watched(source.events())]

    assert len(received) == 1000
    assert len(armed) == 1
