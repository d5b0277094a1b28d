"""One process reads the streams of every debate it watches with one blocking read, not one
per debate; a debate joined while that read waits is read at once, not after the wait."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, aclosing

import pytest
import redis.asyncio

from app import redis_bus
from app.events import Event
from app.redis_bus import RedisBus
from tests.bus.conftest import REDIS_URL, ThrowawayRedis, until

WAIT = 10.0


async def reads_waiting(client: redis.asyncio.Redis) -> int:
    """Connections of the Redis server waiting in an ``XREAD``."""
    clients = await client.client_list()
    return sum(1 for entry in clients if entry.get("cmd") == "xread" and "b" in entry["flags"])


async def blocked_reads(client: redis.asyncio.Redis, *, more_than: int) -> bool:
    return await reads_waiting(client) > more_than


async def watch(
    stack: AsyncExitStack, bus: RedisBus, debate_id: str
) -> AsyncGenerator[Event, None]:
    return await stack.enter_async_context(aclosing(bus.subscribe(debate_id)))


async def next_event(events: AsyncGenerator[Event, None]) -> Event:
    async with asyncio.timeout(WAIT):
        return await anext(events)


async def test_twenty_watched_debates_wait_in_one_read(redis_prefix: str) -> None:
    bus = RedisBus(REDIS_URL, key_prefix=redis_prefix)
    client = redis.asyncio.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        before = await reads_waiting(client)
        async with AsyncExitStack() as stack:
            watched = {}
            for number in range(20):
                debate_id = f"d{number}"
                bus.publish(debate_id, "status", {"status": "running"})
                watched[debate_id] = await watch(stack, bus, debate_id)
            for events in watched.values():
                assert (await next_event(events)).data == {"status": "running"}
            # Every subscription has caught up and waits for what comes next.
            await until(lambda: blocked_reads(client, more_than=before))
            waiting = []
            for _ in range(10):
                waiting.append(await reads_waiting(client) - before)
                await asyncio.sleep(0.05)
            assert max(waiting) == 1, waiting
            for debate_id in watched:
                bus.publish(debate_id, "delta", {"key": "k", "text": debate_id})
            for debate_id, events in watched.items():
                assert (await next_event(events)).data == {"key": "k", "text": debate_id}
    finally:
        await bus.aclose()
        await client.aclose()


async def test_a_debate_joined_while_the_read_waits_is_read_without_waiting_it_out(
    redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait far longer than the test's: only the wake can bring the second debate's events.
    monkeypatch.setattr(redis_bus, "READ_BLOCK_MS", 120_000)
    bus = RedisBus(REDIS_URL, key_prefix=redis_prefix)
    client = redis.asyncio.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        async with AsyncExitStack() as stack:
            bus.publish("first", "status", {"status": "running"})
            first = await watch(stack, bus, "first")
            assert (await next_event(first)).type == "status"
            await until(lambda: blocked_reads(client, more_than=0))
            bus.publish("second", "status", {"status": "running"})
            second = await watch(stack, bus, "second")
            # Read from the stream itself, before the subscription joins the waiting read.
            assert (await next_event(second)).type == "status"
            bus.publish("second", "delta", {"key": "k", "text": "at once"})
            assert (await next_event(second)).data == {"key": "k", "text": "at once"}
            bus.publish("first", "delta", {"key": "k", "text": "still read"})
            assert (await next_event(first)).data == {"key": "k", "text": "still read"}
    finally:
        await bus.aclose()
        await client.aclose()


async def test_the_read_stops_when_no_debate_is_watched_and_starts_again_on_the_next(
    redis_prefix: str,
) -> None:
    bus = RedisBus(REDIS_URL, key_prefix=redis_prefix)
    try:
        for round_number in range(2):
            debate_id = f"d{round_number}"
            bus.publish(debate_id, "status", {"status": "running"})
            async with aclosing(bus.subscribe(debate_id)) as events:
                assert (await next_event(events)).type == "status"
                bus.publish(debate_id, "end", {"status": "completed"})
                assert (await next_event(events)).type == "end"
                with pytest.raises(StopAsyncIteration):
                    await next_event(events)
            await until(lambda: not bus.reading)
    finally:
        await bus.aclose()


async def watch_running(
    stack: AsyncExitStack, watcher: RedisBus, writer: RedisBus
) -> AsyncGenerator[Event, None]:
    """``watcher``'s subscription to debate ``d``, once the debate's first event, published
    by ``writer``, has come through it."""
    writer.publish("d", "status", {"status": "running"})
    await writer.flush()
    events = await watch(stack, watcher, "d")
    assert (await next_event(events)).type == "status"
    return events


async def test_reads_that_find_events_are_spaced_so_a_read_brings_many(
    throwaway_redis: ThrowawayRedis,
) -> None:
    """Twenty-five events a twentieth of a second apart, read with 0.2 s between reads: a
    handful of reads bring all of them, in order, instead of a read each."""
    watcher = RedisBus(throwaway_redis.url, key_prefix="t:", read_spacing=0.2)
    writer = RedisBus(throwaway_redis.url, key_prefix="t:")
    client = redis.asyncio.Redis.from_url(throwaway_redis.url, decode_responses=True)
    try:
        async with AsyncExitStack() as stack:
            events = await watch_running(stack, watcher, writer)
            reads_before = await xread_calls(client)
            for number in range(25):
                writer.publish("d", "delta", {"key": "k", "text": str(number)})
                await asyncio.sleep(0.02)
            texts = [(await next_event(events)).data["text"] for _ in range(25)]
            assert texts == [str(number) for number in range(25)]
            assert await xread_calls(client) - reads_before <= 6
    finally:
        await watcher.aclose()
        await writer.aclose()
        await client.aclose()


async def test_an_event_after_a_quiet_spell_is_read_at_once_not_after_the_spacing(
    throwaway_redis: ThrowawayRedis,
) -> None:
    watcher = RedisBus(throwaway_redis.url, key_prefix="t:", read_spacing=2.0)
    writer = RedisBus(throwaway_redis.url, key_prefix="t:")
    try:
        async with AsyncExitStack() as stack:
            events = await watch_running(stack, watcher, writer)
            await asyncio.sleep(2.2)  # the spacing after the read that found the status is over
            writer.publish("d", "delta", {"key": "k", "text": "late"})
            published = asyncio.get_running_loop().time()
            assert (await next_event(events)).data["text"] == "late"
            assert asyncio.get_running_loop().time() - published < 1.0
    finally:
        await watcher.aclose()
        await writer.aclose()


async def test_one_write_to_two_watched_debates_reaches_both_without_the_spacing(
    throwaway_redis: ThrowawayRedis,
) -> None:
    """A blocked ``XREAD`` is answered with only the stream whose write woke it; the other
    debate's event of the same write is read at once, not a spacing later."""
    watcher = RedisBus(throwaway_redis.url, key_prefix="t:", read_spacing=2.0)
    writer = RedisBus(throwaway_redis.url, key_prefix="t:")
    try:
        async with AsyncExitStack() as stack:
            watched = {}
            for debate_id in ("d1", "d2"):
                writer.publish(debate_id, "status", {"status": "running"})
            await writer.flush()
            for debate_id in ("d1", "d2"):
                watched[debate_id] = await watch(stack, watcher, debate_id)
                assert (await next_event(watched[debate_id])).type == "status"
            await asyncio.sleep(2.2)  # the spacing is over: the read waits in Redis
            for debate_id in ("d1", "d2"):
                writer.publish(debate_id, "delta", {"key": "k", "text": debate_id})
            published = asyncio.get_running_loop().time()
            for debate_id, events in watched.items():
                assert (await next_event(events)).data["text"] == debate_id
            assert asyncio.get_running_loop().time() - published < 1.0
    finally:
        await watcher.aclose()
        await writer.aclose()


async def xread_calls(client: redis.asyncio.Redis) -> int:
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_xread", {}).get("calls", 0))


async def test_viewers_of_a_debate_share_each_event_replayed_or_live_but_not_live_text(
    redis_prefix: str,
) -> None:
    """What a web node makes of an event for its viewers (its page fragment) is made once:
    every subscriber gets the same ``Event``, whether it replays it or reads it live."""
    publisher = RedisBus(REDIS_URL, key_prefix=redis_prefix)
    node = RedisBus(REDIS_URL, key_prefix=redis_prefix)
    try:
        publisher.publish("d", "status", {"status": "running"})
        publisher.publish("d", "turn_started", {"key": "t1"})
        publisher.publish("d", "delta", {"key": "t1", "text": "Hello"})
        await publisher.flush()
        async with AsyncExitStack() as stack:
            first = await watch(stack, node, "d")
            second = await watch(stack, node, "d")
            replayed = [[await next_event(events) for _ in range(3)] for events in (first, second)]
            publisher.publish("d", "turn_completed", {"key": "t1"})
            live = [await next_event(events) for events in (first, second)]
        assert [event.type for event in replayed[0]] == ["status", "turn_started", "delta"]
        assert replayed[0][0] is replayed[1][0] and replayed[0][1] is replayed[1][1]
        assert replayed[0][2] == replayed[1][2] and replayed[0][2] is not replayed[1][2]
        assert live[0].type == "turn_completed" and live[0] is live[1]
    finally:
        await publisher.aclose()
        await node.aclose()
