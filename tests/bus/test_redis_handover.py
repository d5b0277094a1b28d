"""The hand-over from a subscriber's catch-up read to the live events, under every
interleaving a seeded random schedule produces: subscribers join at every offset while
events, the end among them, are published (by this process or another), leave and come
back with their last id, and join after the end. Each gets every event after its id once,
in order, and then the end; none waits past it. One interleaving the random schedule met
only once in many runs is forced here: a subscriber whose catch-up read missed the end,
joining while the shared reader has just handed the end out."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

import pytest
import redis.asyncio

from app.bus import EventBus
from app.events import Event
from app.redis_bus import RedisBus
from tests.bus.conftest import REDIS_URL, BusFactory

WAIT = 15.0
ITERATIONS = 12
SUBSCRIBERS = 16


def send(bus: EventBus, debate_id: str, type: str, data: dict[str, Any]) -> None:
    """Publish with placeholder payloads: these tests are about order and hand-over, not
    about what each event type carries."""
    publisher: Any = bus
    publisher.publish(debate_id, type, data)


async def jitter(rng: random.Random) -> None:
    """A random number of turns of the event loop, now and then a real pause (so replies
    from Redis land between the steps of other tasks)."""
    for _ in range(rng.randrange(4)):
        await asyncio.sleep(0)
    if rng.random() < 0.15:
        await asyncio.sleep(rng.choice((0.0005, 0.002, 0.01)))


async def publish_debate(
    bus: EventBus, debate_id: str, rng: random.Random, count: int, published: list[int]
) -> None:
    for number in range(count):
        send(bus, debate_id, "delta", {"key": "a", "text": f"{number} "})
        published.append(number)
        await jitter(rng)
    # As a runner ends: the usage, a pause (saving the debate), the end.
    send(bus, debate_id, "usage", {"input_tokens": 1, "output_tokens": 1})
    await jitter(rng)
    send(bus, debate_id, "end", {"status": "completed"})


def numbers(events: list[Event]) -> list[object]:
    return [event.data.get("text", event.type) for event in events]


async def viewer(
    bus: EventBus, debate_id: str, rng: random.Random, known: list[Event]
) -> tuple[str | None, list[Event]]:
    """Subscribes from a random id it has seen (or from the start), now and then leaves
    after a few batches, and comes back with its last id (as when it is dropped) until it
    has the end. Returns the id it started from and everything it received."""
    start = rng.choice([None, *known])
    got: list[Event] = []
    last = start
    while not (last is not None and last.type == "end"):
        leave_after = rng.choice((1, 2, 3, None))
        batches = bus.subscribe_batches(debate_id, last_event_id=last.id if last else None)
        async with aclosing(batches):
            async for batch in batches:
                got += batch
                await jitter(rng)
                if leave_after is not None:
                    leave_after -= 1
                    if leave_after == 0:
                        break
        last = got[-1] if got else start
        await jitter(rng)
    return start.id if start else None, got


async def race(
    publisher: EventBus, subscriber_bus: EventBus, debate_id: str, seed: int
) -> list[str]:
    """One debate published while viewers join, leave and come back at random. What went
    wrong, each a line naming the seed: [] when the debate's events are whole and every
    viewer got exactly the events after the id it started from, then the end."""
    rng = random.Random(seed)
    problems: list[str] = []
    count = rng.randrange(5, 40)
    published: list[int] = []
    seen: list[Event] = []
    watcher = asyncio.ensure_future(_follow(subscriber_bus, debate_id, seen))
    running = asyncio.ensure_future(publish_debate(publisher, debate_id, rng, count, published))
    viewers = []
    for _ in range(SUBSCRIBERS):
        await jitter(rng)
        # The ids this process could have handed a viewer so far (any of them, the last
        # before the end and the end itself included once published).
        viewers.append(asyncio.ensure_future(viewer(subscriber_bus, debate_id, rng, list(seen))))
    async with asyncio.timeout(WAIT):
        await running
        await watcher
        everything = seen
        # Latecomers: after the end, from the id before it, from the end, from the start.
        for start in (everything[-2].id, everything[-1].id, None):
            got = await _collect(subscriber_bus, debate_id, start)
            if got != _after(everything, start):
                problems.append(f"seed {seed}: a latecomer from {start} got {numbers(got)}")
        results = await asyncio.gather(*viewers)
    if numbers(everything) != [f"{n} " for n in range(count)] + ["usage", "end"]:
        problems.append(f"seed {seed}: the debate's events were {numbers(everything)}")
    for start, got in results:
        expected = _after(everything, start)
        if [event.id for event in got] != [event.id for event in expected]:
            problems.append(f"seed {seed}: a viewer from {start} got {numbers(got)}")
    return problems


def _after(everything: list[Event], start: str | None) -> list[Event]:
    if start is None:
        return everything
    index = [event.id for event in everything].index(start)
    return everything[index + 1 :]


async def _collect(bus: EventBus, debate_id: str, start: str | None) -> list[Event]:
    got: list[Event] = []
    async for event in bus.subscribe(debate_id, last_event_id=start):
        got.append(event)
    return got


async def _follow(bus: EventBus, debate_id: str, seen: list[Event]) -> None:
    """Every event, to the end, as it comes: resumed from its last id when dropped."""
    while not seen or seen[-1].type != "end":
        last_id = seen[-1].id if seen else None
        async for event in bus.subscribe(debate_id, last_event_id=last_id):
            seen.append(event)


async def test_subscribers_joining_at_any_offset_while_the_end_is_published_get_all_then_end(
    make_bus: BusFactory,
) -> None:
    problems: list[str] = []
    for iteration in range(ITERATIONS):
        bus = make_bus()
        problems += await race(bus, bus, f"d{iteration}", seed=iteration)
    assert problems == []


async def test_viewers_of_another_process_get_all_then_end_whatever_the_interleaving(
    make_redis_bus: Callable[..., RedisBus],
) -> None:
    problems: list[str] = []
    for iteration in range(ITERATIONS * 2):
        runs_it, serves_it = make_redis_bus(), make_redis_bus()
        problems += await race(runs_it, serves_it, f"d{iteration}", seed=1000 + iteration)
    assert problems == []


async def test_many_debates_at_once_with_slow_viewers_that_are_dropped(
    make_redis_bus: Callable[..., RedisBus],
) -> None:
    runs_it = make_redis_bus()
    problems: list[str] = []
    for round in range(6):
        serves_it = make_redis_bus(queue_size=random.Random(round).choice((3, 8, 30)))
        for found in await asyncio.gather(
            *(
                race(runs_it, serves_it, f"r{round}d{number}", seed=5000 + 100 * round + number)
                for number in range(8)
            )
        ):
            problems += found
    assert problems == []


async def live_until_end(batches: AsyncGenerator[list[Event], None]) -> list[Event]:
    got: list[Event] = []
    async with asyncio.timeout(WAIT):
        async for batch in batches:
            got += batch
    return got


async def test_a_live_subscriber_stops_at_the_end_when_a_resume_follows_at_once(
    make_bus: BusFactory,
) -> None:
    bus = make_bus()
    send(bus, "d1", "status", {"status": "running"})
    batches = bus.subscribe_batches("d1")
    assert [event.type for event in await anext(batches)] == ["status"]
    send(bus, "d1", "delta", {"key": "a", "text": "last words"})
    send(bus, "d1", "end", {"status": "completed"})
    bus.reopen("d1")
    send(bus, "d1", "status", {"status": "queued"})
    got = await live_until_end(batches)
    assert [event.type for event in got] == ["delta", "end"]
    # The resume's viewers start after that end.
    batches = bus.subscribe_batches("d1", last_event_id=got[-1].id)
    assert [event.type for event in await anext(batches)] == ["status"]
    await batches.aclose()


async def test_a_live_subscriber_stops_at_an_end_read_together_with_what_follows_it(
    make_redis_bus: Callable[..., RedisBus], redis_prefix: str
) -> None:
    """Another process wrote the end and a resume's first event at once (one transaction):
    the reader gets both in one reply."""
    bus = make_redis_bus()
    send(bus, "d1", "status", {"status": "running"})
    live = bus.subscribe_batches("d1")
    assert [event.type for event in await anext(live)] == ["status"]
    client = redis.asyncio.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        async with client.pipeline(transaction=True) as pipe:
            for type in ("end", "status", "turn_started"):
                pipe.xadd(f"{redis_prefix}d1", {"type": type, "data": "{}"})
            end_id, status_id, _ = await pipe.execute()
    finally:
        await client.aclose()
    got = await live_until_end(live)
    assert [(event.id, event.type) for event in got] == [(end_id, "end")]
    # A subscriber past that end (the resume's viewer) goes on to the next one.
    past_it = bus.subscribe_batches("d1", last_event_id=status_id)
    assert [event.type for event in await anext(past_it)] == ["turn_started"]
    send(bus, "d1", "end", {"status": "completed"})
    assert [event.type for event in await live_until_end(past_it)] == ["end"]


async def test_a_subscriber_joining_as_the_reader_hands_out_the_end_gets_the_end_and_stops(
    make_redis_bus: Callable[..., RedisBus], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reader pauses this long after a read that brought events: it has handed out the
    # end to its subscribers and not yet let go of the debate when the next one joins.
    bus = make_redis_bus(read_spacing=2.0)
    debate_id = "ending"
    send(bus, debate_id, "delta", {"key": "a", "text": "0 "})
    first_event, end_handed_out = asyncio.Event(), asyncio.Event()

    async def first_viewer() -> None:
        async for event in bus.subscribe(debate_id):
            first_event.set()
            if event.type == "end":
                end_handed_out.set()

    following = asyncio.ensure_future(first_viewer())
    real_range = bus._range

    async def catch_up_that_misses_the_end(*args: Any) -> list[Event]:
        # The catch-up read is answered before the end is written, and its reply is read only
        # once the shared reader has handed the end out.
        monkeypatch.setattr(bus, "_range", real_range)
        page = await real_range(*args)
        send(bus, debate_id, "end", {"status": "completed"})
        await end_handed_out.wait()
        return page

    async with asyncio.timeout(WAIT):
        await first_event.wait()
    monkeypatch.setattr(bus, "_range", catch_up_that_misses_the_end)

    async with asyncio.timeout(1.5):  # less than the reader's pause: it must not be needed
        got = await _collect(bus, debate_id, None)
    await following

    assert numbers(got) == ["0 ", "end"]
