"""One contract for both event buses (in memory, Redis streams): order, replay after an id
with no gap and no duplicate, ids it cannot continue from, forgetting ended debates, slow
subscribers, live turns for a page; then what only one of them promises: Redis ids mean the
same in every process and its streams stay bounded, the in-memory hub's ids are its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import pytest
import redis

from app.bus import EventBus
from app.events import Event, EventHub, UnknownEventId
from app.redis_bus import RedisBus
from tests.bus.conftest import REDIS_URL, BusFactory, redis_keys, until

WAIT = 10.0

MALFORMED = [
    "garbage",
    "²",
    "1-²",
    "1-١٢٣",
    "9" * 5_000,
    "1-" + "9" * 5_000,
    "1-",
    "-1",
    "--",
    " 1-1",
    "1-1 ",
    "0x1-1",
    "😀-1",
    "\x00",
    # Past what a stream id can hold (two 64-bit numbers): Redis refuses such an id outright.
    f"1-{2**64}",
    f"{2**64}-0",
    "9" * 20 + "-" + "9" * 20,
    f"{2**64 - 1}-{2**64 - 1}",  # the largest there is: never an entry of these streams
]


def debate_events(turns: int) -> list[tuple[str, dict[str, Any]]]:
    """What a runner publishes for a small debate: turns streamed in deltas, then the end."""
    events: list[tuple[str, dict[str, Any]]] = [("status", {"status": "running"})]
    for number in range(turns):
        key = f"r1.opening.seat{number}"
        events.append(("turn_started", {"key": key, "role": f"seat{number}"}))
        events += [("delta", {"key": key, "text": f"word{i} "}) for i in range(3)]
        events.append(("turn_completed", {"key": key, "turn_id": number + 1}))
    events.append(("end", {"status": "completed"}))
    return events


def publish_all(bus: EventBus, debate_id: str, events: list[tuple[str, dict[str, Any]]]) -> None:
    for type, data in events:
        bus.publish(debate_id, type, data)


def content(events: list[Event]) -> list[tuple[str, dict[str, Any]]]:
    return [(event.type, event.data) for event in events]


async def written(bus: EventBus) -> None:
    """Until what was published is where other readers see it."""
    if isinstance(bus, RedisBus):
        async with asyncio.timeout(WAIT):
            await bus.flush()


async def collect(bus: EventBus, debate_id: str, last_event_id: str | None = None) -> list[Event]:
    """Every event of the subscription, to its end."""
    got: list[Event] = []
    async with asyncio.timeout(WAIT):
        async for event in bus.subscribe(debate_id, last_event_id=last_event_id):
            got.append(event)
    return got


def past_the_end(event_id: str) -> str:
    head, _, tail = event_id.rpartition("-")
    return f"{head}-{int(tail) + 1}"


# -- the contract ---------------------------------------------------------------------------


async def test_a_subscriber_gets_every_event_in_publish_order_and_stops_at_the_end(
    make_bus: BusFactory,
) -> None:
    bus = make_bus()
    published = debate_events(turns=3)
    publish_all(bus, "d1", published)
    got = await collect(bus, "d1")
    assert content(got) == published
    assert len({event.id for event in got}) == len(got)


async def test_a_live_subscriber_gets_what_is_published_after_it_joined(
    make_bus: BusFactory,
) -> None:
    bus = make_bus()
    published = debate_events(turns=2)
    bus.publish("d1", *published[0])
    batches = bus.subscribe_batches("d1")
    got = list(await anext(batches))
    assert content(got) == published[:1]

    async def publish_slowly() -> None:
        for type, data in published[1:]:
            await asyncio.sleep(0.005)
            bus.publish("d1", type, data)

    publisher = asyncio.ensure_future(publish_slowly())
    async with asyncio.timeout(WAIT):
        async for batch in batches:
            got += batch
    await publisher
    assert content(got) == published


async def test_replay_after_any_id_has_no_gap_and_no_duplicate(make_bus: BusFactory) -> None:
    bus = make_bus()
    published = debate_events(turns=3)
    publish_all(bus, "d1", published)
    everything = await collect(bus, "d1")
    for cut in range(len(everything)):
        rest = await collect(bus, "d1", last_event_id=everything[cut].id)
        assert rest == everything[cut + 1 :], cut


async def test_resuming_while_events_keep_coming_has_no_gap_and_no_duplicate(
    make_bus: BusFactory,
) -> None:
    bus = make_bus()
    published = debate_events(turns=40)
    publish_all(bus, "d1", published[:30])
    await written(bus)
    first_part: list[Event] = []
    async with asyncio.timeout(WAIT), aclosing(bus.subscribe_batches("d1")) as batches:
        async for batch in batches:
            first_part += batch
            if len(first_part) >= 12:
                break

    async def publish_the_rest() -> None:
        for type, data in published[30:]:
            bus.publish("d1", type, data)
            await asyncio.sleep(0)

    publisher = asyncio.ensure_future(publish_the_rest())
    rest = await collect(bus, "d1", last_event_id=first_part[-1].id)
    await publisher
    assert content(first_part + rest) == published


@pytest.mark.parametrize("last_id", MALFORMED)
async def test_a_malformed_id_means_reload(make_bus: BusFactory, last_id: str) -> None:
    bus = make_bus()
    publish_all(bus, "d1", debate_events(turns=1))
    await written(bus)
    with pytest.raises(UnknownEventId):
        await collect(bus, "d1", last_event_id=last_id)


async def test_an_id_past_the_end_or_of_a_forgotten_debate_means_reload(
    make_bus: BusFactory,
) -> None:
    bus = make_bus()
    bus.publish("d1", "status", {"status": "running"})
    [first] = await collect_until_quiet(bus, "d1")
    with pytest.raises(UnknownEventId):
        await collect(bus, "d1", last_event_id=past_the_end(first.id))
    with pytest.raises(UnknownEventId):
        await collect(bus, "never-published", last_event_id=first.id)


async def collect_until_quiet(bus: EventBus, debate_id: str) -> list[Event]:
    """The events so far of a debate that has not ended."""
    batches = bus.subscribe_batches(debate_id)
    try:
        async with asyncio.timeout(WAIT):
            return await anext(batches)
    finally:
        await batches.aclose()


async def test_an_ended_debate_is_forgotten_after_the_keep_setting(make_bus: BusFactory) -> None:
    bus = make_bus(keep_ended_seconds=1)
    publish_all(bus, "d1", debate_events(turns=1))
    everything = await collect(bus, "d1")
    assert (await bus.snapshot("d1")).ended
    await asyncio.sleep(1.3)
    # The in-memory hub forgets during a later publish (of any debate); Redis by itself.
    bus.publish("another", "status", {"status": "running"})
    await written(bus)
    snapshot = await bus.snapshot("d1")
    assert snapshot.last_id is None and not snapshot.ended
    with pytest.raises(UnknownEventId):
        await collect(bus, "d1", last_event_id=everything[2].id)


async def test_a_subscriber_that_falls_behind_is_dropped_and_resumes_from_its_last_id(
    make_bus: BusFactory,
) -> None:
    bus = make_bus(queue_size=5)
    published = debate_events(turns=6)
    bus.publish("d1", *published[0])
    batches = bus.subscribe_batches("d1")
    got = list(await anext(batches))
    # It reads nothing while the rest arrives: far more than its queue holds.
    publish_all(bus, "d1", published[1:])
    await written(bus)
    await until(lambda: bus.subscriber_count("d1") == 0)
    async with asyncio.timeout(WAIT):
        async for batch in batches:
            got += batch
    assert got[-1].type != "end"  # dropped before the end, never waited for
    rest = await collect(bus, "d1", last_event_id=got[-1].id)
    assert content(got + rest) == published


async def test_the_snapshot_shows_the_live_turns_as_of_its_last_id(make_bus: BusFactory) -> None:
    bus = make_bus()
    publish_all(
        bus,
        "d1",
        [
            ("status", {"status": "running"}),
            ("turn_started", {"key": "a", "role": "pro"}),
            ("turn_started", {"key": "b", "role": "con"}),
            ("delta", {"key": "a", "text": "Tabs "}),
            ("delta", {"key": "b", "text": "lost "}),
            ("retrying", {"key": "b", "attempt": 2}),
            ("delta", {"key": "b", "text": "Spaces"}),
            ("delta", {"key": "a", "text": "win."}),
            ("turn_started", {"key": "c", "role": "judge"}),
            ("turn_completed", {"key": "c"}),
        ],
    )
    snapshot = await bus.snapshot("d1")
    so_far = await collect_until_quiet(bus, "d1")
    assert snapshot.last_id == so_far[-1].id and not snapshot.ended
    assert [(turn.key, turn.info["role"], turn.text) for turn in snapshot.live_turns] == [
        ("a", "pro", "Tabs win."),
        ("b", "con", "Spaces"),
    ]
    bus.publish("d1", "delta", {"key": "a", "text": " Really."})
    bus.publish("d1", "end", {"status": "completed"})
    after = await collect(bus, "d1", last_event_id=snapshot.last_id)
    assert content(after) == [
        ("delta", {"key": "a", "text": " Really."}),
        ("end", {"status": "completed"}),
    ]
    assert (await bus.snapshot("d1")).ended


async def test_a_resumed_debate_goes_on_after_its_end(make_bus: BusFactory) -> None:
    bus = make_bus()
    publish_all(bus, "d1", debate_events(turns=1))
    first_run = await collect(bus, "d1")
    assert bus.has_ended("d1")
    assert await collect(bus, "d1", last_event_id=first_run[-1].id) == []
    bus.reopen("d1")
    assert not bus.has_ended("d1")
    second = debate_events(turns=1)
    bus.publish("d1", "status", {"status": "queued"})
    batches = bus.subscribe_batches("d1", last_event_id=first_run[-1].id)
    got = list(await anext(batches))
    publish_all(bus, "d1", second)
    async with asyncio.timeout(WAIT):
        async for batch in batches:
            got += batch
    assert content(got) == [("status", {"status": "queued"}), *second]
    assert bus.has_ended("d1")


async def test_nothing_but_a_resume_follows_a_runs_end(make_bus: BusFactory) -> None:
    bus = make_bus()
    first_run = debate_events(turns=1)
    publish_all(bus, "d1", first_run)
    # A second end (a cancel that ends the stream too) and stray text come to nothing.
    bus.publish("d1", "end", {"status": "cancelled"})
    bus.publish("d1", "delta", {"key": "r1.opening.seat0", "text": "late "})
    await written(bus)
    ended = await collect(bus, "d1")
    assert content(ended) == first_run
    assert bus.has_ended("d1")
    # A resume begins with a status: its run goes on, up to its own end, and only one.
    second_run = [("status", {"status": "queued"}), *debate_events(turns=1)]
    publish_all(bus, "d1", second_run)
    bus.publish("d1", "end", {"status": "failed"})
    await written(bus)
    assert content(await collect(bus, "d1", last_event_id=ended[-1].id)) == second_run


# -- Redis only: every process continues every stream ---------------------------------------


async def test_another_process_serves_the_stream_and_resumes_from_an_id_of_the_first(
    make_redis_bus: Callable[..., RedisBus],
) -> None:
    runs_it, serves_it = make_redis_bus(), make_redis_bus()
    published = debate_events(turns=3)
    publish_all(runs_it, "d1", published[:4])  # the first turn started, one delta in
    await written(runs_it)

    snapshot = await serves_it.snapshot("d1")
    [live] = snapshot.live_turns
    assert (live.key, live.text) == ("r1.opening.seat0", "word0 word1 ")
    seen_by_first = await collect_until_quiet(runs_it, "d1")
    assert snapshot.last_id == seen_by_first[-1].id

    watching = asyncio.ensure_future(collect(serves_it, "d1"))
    publish_all(runs_it, "d1", published[4:])
    everything = await watching
    assert content(everything) == published
    assert [event.id for event in everything[:4]] == [event.id for event in seen_by_first]
    # A viewer of the first process reconnects to the second with its last id.
    rest = await collect(serves_it, "d1", last_event_id=seen_by_first[-1].id)
    assert rest == everything[4:]
    for cut in (0, 3, 9, len(everything) - 2):
        rest = await collect(serves_it, "d1", last_event_id=everything[cut].id)
        assert rest == everything[cut + 1 :]
    # A restarted process (a new bus) continues just as well.
    restarted = make_redis_bus()
    assert await collect(restarted, "d1", last_event_id=everything[5].id) == everything[6:]


async def test_two_processes_ending_the_same_run_write_one_end(
    make_redis_bus: Callable[..., RedisBus],
) -> None:
    worker, web_node = make_redis_bus(), make_redis_bus()
    run = debate_events(turns=1)
    publish_all(worker, "d1", run[:-1])
    await written(worker)
    web_node.publish("d1", "end", {"status": "cancelled"})  # the worker seemed dead
    await written(web_node)
    worker.publish("d1", "delta", {"key": "r1.opening.seat0", "text": "late "})
    worker.publish("d1", "end", {"status": "cancelled"})  # it was only slow
    await written(worker)
    everything = await collect(make_redis_bus(), "d1")
    assert content(everything) == [*run[:-1], ("end", {"status": "cancelled"})]
    # The stream still expires after its end, as a stream ended once does.
    stream_ttl = redis.Redis.from_url(REDIS_URL).ttl(worker.stream_key("d1"))
    assert stream_ttl > 0


async def test_an_id_of_another_debates_stream_means_reload(
    make_redis_bus: Callable[..., RedisBus],
) -> None:
    bus = make_redis_bus()
    bus.publish("d1", "status", {"status": "running"})
    [of_d1] = await collect_until_quiet(bus, "d1")
    # Ids are per stream: two streams written in the same millisecond share their ids.
    await asyncio.sleep(0.01)
    bus.publish("d2", "status", {"status": "running"})
    [of_d2] = await collect_until_quiet(bus, "d2")
    assert of_d1.id != of_d2.id
    with pytest.raises(UnknownEventId):
        await collect(bus, "d2", last_event_id=of_d1.id)


async def test_a_stream_keeps_about_its_max_length_and_older_ids_mean_reload(
    make_redis_bus: Callable[..., RedisBus], redis_prefix: str
) -> None:
    bus = make_redis_bus(max_length=100)
    bus.publish("d1", "status", {"status": "running"})
    [first] = await collect_until_quiet(bus, "d1")
    for number in range(3000):
        bus.publish("d1", "delta", {"key": "a", "text": str(number)})
    bus.publish("d1", "end", {"status": "completed"})
    await written(bus)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        length = client.xlen(f"{redis_prefix}d1")
    finally:
        client.close()
    # MAXLEN ~ trims whole nodes of the stream: at least 100 kept, never much more.
    assert 100 <= length <= 400
    with pytest.raises(UnknownEventId):
        await collect(bus, "d1", last_event_id=first.id)
    tail = await collect(bus, "d1")
    assert [event.data.get("text") for event in tail[-3:-1]] == ["2998", "2999"]
    assert await collect(bus, "d1", last_event_id=tail[-10].id) == tail[-9:]


async def test_an_ended_stream_expires_and_a_resume_keeps_it_again(
    make_redis_bus: Callable[..., RedisBus], redis_prefix: str
) -> None:
    bus = make_redis_bus(keep_ended_seconds=60)
    publish_all(bus, "d1", debate_events(turns=1)[:-1])
    bus.publish("d1", "turn_started", {"key": "still-live"})
    await written(bus)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = redis_keys(redis_prefix)
        assert keys and all(client.ttl(key) == -1 for key in keys)
        bus.publish("d1", "end", {"status": "cancelled"})
        await written(bus)
        assert all(0 < client.ttl(key) <= 60 for key in redis_keys(redis_prefix))
        bus.reopen("d1")
        bus.publish("d1", "status", {"status": "queued"})
        await written(bus)
        assert all(client.ttl(key) == -1 for key in redis_keys(redis_prefix))
    finally:
        client.close()


# -- in memory only: ids belong to the process -----------------------------------------------


async def test_an_in_memory_id_means_nothing_to_another_process() -> None:
    first, restarted = EventHub(), EventHub()
    for hub in (first, restarted):
        publish_all(hub, "d1", debate_events(turns=1))
    everything = await collect(first, "d1")
    with pytest.raises(UnknownEventId):
        await collect(restarted, "d1", last_event_id=everything[2].id)
