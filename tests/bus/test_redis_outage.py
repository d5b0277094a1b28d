"""When Redis goes away mid-debate: publishing never fails the debate (events wait in the
publisher's outbox and are written once Redis is back), and subscribers keep their place and
see every finished turn afterwards. Each test runs its own throwaway redis-server (no
persistence, so a restart loses what it held) and kills it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.debates import DebateRequest, create, prepare
from app.events import Event
from app.providers.registry import build_providers, provider_statuses
from app.redis_bus import RedisBus
from app.runner import Runner
from tests.bus.conftest import ThrowawayRedis, until
from tests.fakes.llm_server import FakeLLMServer

WAIT = 20.0


def turn(number: int) -> list[tuple[str, dict[str, Any]]]:
    key = f"r1.opening.seat{number}"
    return [
        ("turn_started", {"key": key}),
        ("delta", {"key": key, "text": "some text"}),
        ("turn_completed", {"key": key}),
    ]


def publish_all(bus: RedisBus, events: list[tuple[str, dict[str, Any]]]) -> None:
    for type, data in events:
        bus.publish("d1", type, data)


def completed_keys(events: list[Event]) -> list[str]:
    return [str(event.data["key"]) for event in events if event.type == "turn_completed"]


async def test_a_restart_of_redis_loses_no_finished_turn_for_a_watching_subscriber(
    throwaway_redis: ThrowawayRedis, caplog: pytest.LogCaptureFixture
) -> None:
    publisher = RedisBus(throwaway_redis.url, key_prefix="t:")
    viewer = RedisBus(throwaway_redis.url, key_prefix="t:")
    seen: list[Event] = []

    async def watch() -> None:
        async for event in viewer.subscribe("d1"):
            seen.append(event)

    try:
        publisher.publish("d1", "status", {"status": "running"})
        publish_all(publisher, turn(0))
        watching = asyncio.ensure_future(watch())
        await until(lambda: completed_keys(seen) == ["r1.opening.seat0"])

        throwaway_redis.kill()
        with caplog.at_level(logging.WARNING, logger="app.redis_bus"):
            publish_all(publisher, turn(1))  # returns at once; Redis is gone
            await asyncio.sleep(0.5)  # the writer and the reader both meet the outage
            assert "redis unreachable" in caplog.text
            throwaway_redis.start()
            publish_all(publisher, turn(2))
            publisher.publish("d1", "end", {"status": "completed"})
            async with asyncio.timeout(WAIT):
                await watching
        assert "redis reachable again" in caplog.text
        assert completed_keys(seen) == [f"r1.opening.seat{n}" for n in range(3)]
        assert seen[-1].type == "end"
        assert len({event.id for event in seen}) == len(seen)
    finally:
        await publisher.aclose()
        await viewer.aclose()


async def test_a_debate_runs_to_its_end_with_redis_down_and_its_events_arrive_later(
    throwaway_redis: ThrowawayRedis,
    engine: Engine,
    settings: Settings,
    fake_llm: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    throwaway_redis.kill()
    bus = RedisBus(throwaway_redis.url, key_prefix="t:")
    try:
        request = DebateRequest(topic="Is Redis optional?", rounds=1)
        prepared = prepare(request, statuses=provider_statuses(settings))
        debate_id = create(engine, prepared=prepared, settings=settings).id
        runner = Runner(
            engine=engine, hub=bus, providers=build_providers(settings), settings=settings
        )
        with caplog.at_level(logging.WARNING, logger="app.redis_bus"):
            async with asyncio.timeout(WAIT):
                result = await runner.run(debate_id)
        assert result.status == "completed"
        assert "redis unreachable" in caplog.text
        with session_scope(engine) as session:
            saved = [row.key for row in store.turns_of(session, debate_id=debate_id)]

        throwaway_redis.start()
        viewer = RedisBus(throwaway_redis.url, key_prefix="t:")
        try:
            async with asyncio.timeout(WAIT):
                seen = [event async for event in viewer.subscribe(debate_id)]
        finally:
            await viewer.aclose()
        assert completed_keys(seen) == saved and saved
        assert seen[0].data["status"] == "running" and seen[-1].type == "end"
    finally:
        await bus.aclose()
