"""How the Redis bus writes: one round trip per batch of events (``EVALSHA`` of its script,
no ``SCRIPT EXISTS`` before each batch), the batches spaced so that each carries what was
published meanwhile, and a server that has forgotten the script
(restarted, or ``SCRIPT FLUSH``) is given it again, with no event lost or written twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis

from app.redis_bus import RedisBus
from tests.bus.conftest import ThrowawayRedis

DEBATE = "d-publishing"


def command_calls(client: redis.Redis, *, succeeded: bool = False) -> dict[str, int]:
    """Calls of each command the server has run (those that did not fail, if asked)."""
    stats = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): int(stat["calls"])
        - (int(stat["failed_calls"]) if succeeded else 0)
        for name, stat in stats.items()
    }


def stream_types(client: redis.Redis, bus: RedisBus) -> list[str]:
    return [fields[b"type"].decode() for _, fields in client.xrange(bus.stream_key(DEBATE))]


@pytest.fixture
async def bus_and_client(
    throwaway_redis: ThrowawayRedis,
) -> AsyncIterator[tuple[RedisBus, redis.Redis]]:
    """A bus on a Redis server of the test's own, and a client to look at what it wrote."""
    bus = RedisBus(throwaway_redis.url, key_prefix="t:")
    client = redis.Redis.from_url(throwaway_redis.url)
    try:
        yield bus, client
    finally:
        await bus.aclose()
        client.close()


async def test_a_batch_of_events_goes_out_without_asking_whether_the_script_exists(
    bus_and_client: tuple[RedisBus, redis.Redis],
) -> None:
    bus, client = bus_and_client
    for round_ in range(5):
        for number in range(20):
            bus.publish(DEBATE, "delta", {"key": "k", "text": f"{round_}.{number}"})
        await bus.flush()
    calls = command_calls(client)
    assert "script|exists" not in calls
    assert calls.get("script|load") == 1  # the first batch taught the server the script
    # Only the first batch went out twice: before and after the server had the script.
    assert command_calls(client, succeeded=True).get("evalsha") == 100
    assert calls.get("evalsha") == 100 + 20
    assert len(stream_types(client, bus)) == 100


async def test_a_server_that_forgot_the_script_is_given_it_again_and_nothing_is_doubled(
    bus_and_client: tuple[RedisBus, redis.Redis],
) -> None:
    bus, client = bus_and_client
    bus.publish(DEBATE, "turn_started", {"key": "k"})
    await bus.flush()
    client.script_flush()
    for number in range(10):
        bus.publish(DEBATE, "delta", {"key": "k", "text": str(number)})
    bus.publish(DEBATE, "turn_completed", {"key": "k"})
    await bus.flush()
    assert stream_types(client, bus) == ["turn_started"] + ["delta"] * 10 + ["turn_completed"]
    assert command_calls(client).get("script|load") == 2


def written_ms(client: redis.Redis, bus: RedisBus) -> list[int]:
    """When Redis wrote each entry of the stream, in its milliseconds (the entry ids')."""
    return [int(entry_id.split(b"-")[0]) for entry_id, _ in client.xrange(bus.stream_key(DEBATE))]


async def test_events_published_within_the_spacing_go_out_together_after_it(
    throwaway_redis: ThrowawayRedis,
) -> None:
    bus = RedisBus(throwaway_redis.url, key_prefix="t:", write_spacing=0.3)
    client = redis.Redis.from_url(throwaway_redis.url)
    try:
        bus.publish(DEBATE, "delta", {"key": "k", "text": "first"})
        await bus.flush()
        bus.publish(DEBATE, "delta", {"key": "k", "text": "second"})
        await asyncio.sleep(0.02)
        bus.publish(DEBATE, "delta", {"key": "k", "text": "third"})
        await bus.flush()
        await asyncio.sleep(0.5)  # quiet for longer than the spacing
        published_ms = time.time() * 1000
        bus.publish(DEBATE, "delta", {"key": "k", "text": "after a quiet spell"})
        await bus.flush()
        first, second, third, fourth = written_ms(client, bus)
    finally:
        await bus.aclose()
        client.close()

    assert second - first >= 250, "the second send waited for the spacing"
    assert third - second < 100, "what came meanwhile went in the same send"
    assert fourth - published_ms < 200, "after a quiet spell an event goes at once"
