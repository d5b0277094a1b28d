"""The event bus over Redis streams: any process sharing the Redis server serves any debate.

Keys, per debate (``<prefix>`` is ``ARGUE_REDIS_KEY_PREFIX``):

- ``<prefix><debate id>``: the stream. One entry per event (fields ``type`` and ``data``, the
  JSON payload), deltas included: they are how live text reaches viewers on other
  processes. Trimmed to about ``ARGUE_REDIS_STREAM_MAX_LENGTH`` entries (``MAXLEN ~``).
- ``<prefix><debate id>:live``: each turn still streaming, by key, with the stream id of its
  ``turn_started``: a process that did not run the debate rebuilds the live turns by reading
  the stream from the oldest of these (``snapshot``).
- ``<prefix><debate id>:writers``: the last event each bus instance wrote, so a batch sent
  again after a lost connection writes nothing twice; and ``ended`` once the run's terminal
  event is written, until the next ``status`` (a resume publishes one first).

A run's terminal event is its last, whichever process sends it first: while ``ended`` is
set, nothing but a ``status`` is written (a second ``end`` included). Two processes may
end a run: a web node that cancels a debate whose worker is dead (no one else would end its
stream), and that worker, had it only been slow; or a worker that finds an ended debate's
job, in case its last holder died before it could end the stream.

After the terminal event all three expire in ``ARGUE_REDIS_KEEP_ENDED_SECONDS``; any later
event (a resume) keeps them again. One Lua script does each event's writes, so they happen
together.

Event ids are the stream's entry ids (``<milliseconds>-<sequence>``), in the ``Event``'s
``epoch`` and ``seq``: the same in every process and across restarts. A subscriber continues
after its id if the stream still holds that entry; any other id (malformed, one this stream
never held, past the end, trimmed away, or lost with the Redis server's data) raises
``UnknownEventId``: the viewer reloads. ``0-0`` means "from the start". (Ids are per stream:
another debate's may name an entry of this one too, as with the in-memory hub.)

Publishing never waits: events go to an outbox that one writer task sends in order, all that
is pending in one pipelined round trip, and no sooner than ``WRITE_SPACING_SECONDS`` (5 ms)
after the round trip before began: sent as they came, at fifty debates nearly every round
trip carried one event, and each woke Redis and the worker's event loop again. While Redis is
unreachable the outbox keeps every event but deltas past ``buffer_limit`` (dropped, with a
log line: the completed turn carries the text), and the writer retries until Redis is back;
the debate goes on meanwhile.

Reading: a subscriber first pages through the stream itself (paced by its own consumer, so a
long replay never overflows anything), then joins its debate's reader in this process: the
debate's cursor and its local subscribers. One task reads for every watched debate at once,
one ``XREAD BLOCK`` over all their streams, and hands each new event to every local
subscriber of its debate through a bounded queue; one that falls behind is dropped and
resumes from its last id, as with the in-memory hub. One read for all, not one per debate:
at fifty debates a read per debate was a round trip per debate for every window of live
text, a fifth of a web node's CPU. A read that found events is followed by the next only
``READ_SPACING_SECONDS`` (10 ms) after it began, so that one read brings every debate's
events of that interval: back to back, with live text arriving from many debates at
different instants, nearly every read brought one event. A read that waited is answered
with the one stream whose write woke it (Redis serves a blocked ``XREAD`` so), so a reply
of one stream among several is followed at once by a read that does not wait: the rest of
that write, other debates' events, comes now, not a spacing later. A debate joined while
that read waits is added by a write to this process's own wake stream (``<prefix>wake:<bus id>``,
also in the read), so the read returns at once and the next one includes it. The reader
outlives a lost connection: it retries from each debate's last id. If the server lost its
data meanwhile (restarted without persistence), it goes on with what is written next; only
the live text of turns already under way is missing until they end. Every subscriber in
this process gets the same ``Event`` for the same entry, read live or replayed (live text
aside), so what is rendered of it for viewers is rendered once (``_SharedEvents``).

Needs Redis 6.2 or later (exclusive ranges in ``XRANGE``), one server (not Redis Cluster: the
read spans the streams of many debates).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import secrets
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import BusyLoadingError, NoScriptError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import KeyT, StreamIdT

from app.events import (
    STATUS_EVENT,
    TERMINAL_EVENT,
    Event,
    LiveState,
    Snapshot,
    Subscriber,
    UnknownEventId,
    drain,
    live_turns,
    offer,
    track_live,
)
from app.pacing import Spacing

log = logging.getLogger(__name__)

T = TypeVar("T")

# An entry id: ASCII digits only, at most 20 each (Redis's ids are two 64-bit numbers).
_STREAM_ID = re.compile(r"(?P<ms>[0-9]{1,20})-(?P<seq>[0-9]{1,20})", re.ASCII)
FROM_START = "0-0"
_LARGEST_ID_PART = 2**64 - 1
# Errors after which the same command may succeed later: the server is down, restarting or
# loading its data.
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, BusyLoadingError, OSError)

READ_BLOCK_MS = 1000
# A read that found events is followed by the next no sooner than this after it began: with
# live text arriving from many debates at different instants, back-to-back reads would
# return one event each, a round trip per event. Spaced, one read brings every debate's
# events of the interval, for at most this much more delay.
READ_SPACING_SECONDS = 0.01
READ_COUNT = 500
# The wake stream keeps a few entries, and is gone this long after its process last woke.
WAKE_MAX_LENGTH = 16
WAKE_KEEP_SECONDS = 3600
REPLAY_PAGE = 500
WRITE_BATCH = 500
# A send of the outbox follows the one before no sooner than this after it began, so that it
# carries every debate's events of the interval (as the read spacing does for reads).
WRITE_SPACING_SECONDS = 0.005
RETRY_FIRST_SECONDS = 0.05
RETRY_MAX_SECONDS = 2.0
# A local reader waits this long for its own outbox before reading, so what this process
# just published (a resume's status) is in what it reads.
OWN_WRITES_WAIT_SECONDS = 1.0
CLOSE_WAIT_SECONDS = 5.0
REMEMBERED_ENDINGS = 10_000
# Events other than live text made of stream entries lately, kept so that every subscriber
# reading an entry gets the same ``Event`` (``_SharedEvents``).
SHARED_EVENTS = 2048
# Live text: cheap to encode, and most of a stream; not kept.
UNSHARED_TYPES = frozenset({"delta"})

_PUBLISH = """
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[5]) or '0')
local counter = tonumber(ARGV[6])
if counter <= last then
  return false
end
redis.call('HSET', KEYS[3], ARGV[5], ARGV[6])
local kind = ARGV[2]
if kind == 'status' then
  redis.call('HDEL', KEYS[3], 'ended')
elseif redis.call('HEXISTS', KEYS[3], 'ended') == 1 then
  return false
elseif kind == 'end' then
  redis.call('HSET', KEYS[3], 'ended', '1')
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*',
                      'type', ARGV[2], 'data', ARGV[3])
if ARGV[4] ~= '' then
  if kind == 'turn_started' then
    redis.call('HSET', KEYS[2], ARGV[4], id)
  elseif kind == 'turn_completed' or kind == 'turn_failed' then
    redis.call('HDEL', KEYS[2], ARGV[4])
  end
end
for i = 1, 3 do
  if kind == 'end' then
    redis.call('EXPIRE', KEYS[i], ARGV[7])
  else
    redis.call('PERSIST', KEYS[i])
  end
end
return id
"""


@dataclass(frozen=True)
class _Outgoing:
    debate_id: str
    type: str
    payload: str
    turn_key: str
    counter: int


@dataclass(eq=False)
class _Reader:
    """Where this process has read a debate's stream to, and the subscribers it feeds."""

    cursor: str
    subscribers: list[Subscriber] = field(default_factory=list)


def stream_position(raw: str) -> tuple[int, int] | None:
    """An entry id as numbers, for ordering; None when it is not one (Redis refuses an id
    with a part past 64 bits as a command's argument)."""
    match = _STREAM_ID.fullmatch(raw)
    if match is None:
        return None
    position = int(match["ms"]), int(match["seq"])
    return position if max(position) <= _LARGEST_ID_PART else None


def _position(event_id: str) -> tuple[int, int]:
    return stream_position(event_id) or (0, 0)


def _event(debate_id: str, entry_id: str, fields: dict[str, str]) -> Event:
    ms, _, seq = entry_id.partition("-")
    try:
        data = json.loads(fields.get("data", "{}"))
    except ValueError:
        data = {}
    return Event(
        seq=int(seq),
        epoch=ms,
        debate_id=debate_id,
        type=fields.get("type", ""),
        data=data if isinstance(data, dict) else {},
    )


def _event_position(event: Event) -> tuple[int, int]:
    # A stream event's epoch is its entry's milliseconds: no need to format and parse its id.
    return int(event.epoch), event.seq


def _after(events: list[Event], event_id: str) -> list[Event]:
    """The events (in stream order) that come after ``event_id``. Nearly always every one
    of them: only the first is compared, the rest only when it does not come after."""
    after = _position(event_id)
    if not events or _event_position(events[0]) > after:
        return events
    return [event for event in events if _event_position(event) > after]


def _through_end(events: list[Event]) -> list[Event] | None:
    """The events up to and including the first terminal one; None when there is none."""
    for index, event in enumerate(events):
        if event.type == TERMINAL_EVENT:
            return events[: index + 1]
    return None


class _SharedEvents:
    """The events this process made lately of its streams' entries, by entry: every
    subscriber that reads an entry, live or in its replay, gets the same ``Event``, so what
    is made of it for viewers (its encodings) is made once, as with the in-memory hub. A
    debate's viewers join together when it starts and each replays its first events: made
    anew for each of them, its page fragments were rendered and its status read from the
    database once per viewer. The oldest are let go past ``limit``; live text, cheap to
    encode, is not kept."""

    def __init__(self, limit: int = SHARED_EVENTS) -> None:
        self._limit = limit
        self._events: dict[tuple[str, str], Event] = {}

    def of(self, debate_id: str, entries: Any) -> list[Event]:
        """Stream entries (``[id, {field: value}]`` pairs, as ``XRANGE`` replies) as events."""
        events = []
        for entry_id, fields in entries:
            if fields.get("type") in UNSHARED_TYPES:
                events.append(_event(debate_id, entry_id, fields))
                continue
            key = (debate_id, entry_id)
            event = self._events.get(key)
            if event is None:
                event = self._events[key] = _event(debate_id, entry_id, fields)
                if len(self._events) > self._limit:
                    del self._events[next(iter(self._events))]
            events.append(event)
        return events


class _Outage:
    """Logs a lost connection once, and its end once, instead of at every retry."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._delay = 0.0

    async def wait(self, error: Exception) -> None:
        if not self._delay:
            log.warning("redis unreachable (%s): %s; retrying", self._what, error)
            self._delay = RETRY_FIRST_SECONDS
        else:
            self._delay = min(self._delay * 2, RETRY_MAX_SECONDS)
        await asyncio.sleep(self._delay)

    def over(self) -> None:
        if self._delay:
            log.warning("redis reachable again (%s)", self._what)
            self._delay = 0.0


class RedisBus:
    def __init__(
        self,
        url: str,
        *,
        key_prefix: str = "argue:events:",
        max_length: int = 20000,
        keep_ended_seconds: int = 3600,
        queue_size: int = 2000,
        buffer_limit: int = 50_000,
        read_spacing: float = READ_SPACING_SECONDS,
        write_spacing: float = WRITE_SPACING_SECONDS,
    ) -> None:
        # Retries are this module's own (from the last id, with backoff); the client's one
        # immediate retry only replaces a pooled connection the server has closed.
        self._redis: Redis = Redis.from_url(
            url,
            decode_responses=True,
            retry=Retry(NoBackoff(), 1),
            socket_connect_timeout=2.0,
            socket_timeout=READ_BLOCK_MS / 1000 + 5.0,
            health_check_interval=30,
        )
        self._publish_sha = hashlib.sha1(_PUBLISH.encode(), usedforsecurity=False).hexdigest()
        self._prefix = key_prefix
        self._max_length = max_length
        self._keep_ended = keep_ended_seconds
        self._queue_size = queue_size
        self._buffer_limit = buffer_limit
        self._reads = Spacing(read_spacing)
        self._sends = Spacing(write_spacing)
        self._writer_id = secrets.token_hex(8)
        self._counter = 0
        self._outbox: deque[_Outgoing] = deque()
        self._written = asyncio.Event()
        self._written.set()
        self._writer: asyncio.Task[None] | None = None
        self._dropped_deltas = 0
        self._readers: dict[str, _Reader] = {}
        self._reading: asyncio.Task[None] | None = None
        self._waking: asyncio.Task[None] | None = None
        self._wake_key = f"{key_prefix}wake:{self._writer_id}"
        self._wake_cursor = FROM_START
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._shared = _SharedEvents()
        self._closed = False

    # -- keys ---------------------------------------------------------------------------

    def stream_key(self, debate_id: str) -> str:
        return f"{self._prefix}{debate_id}"

    def _keys(self, debate_id: str) -> list[str]:
        stream = self.stream_key(debate_id)
        return [stream, f"{stream}:live", f"{stream}:writers"]

    # -- publishing ---------------------------------------------------------------------

    def publish(self, debate_id: str, type: str, data: Mapping[str, Any] | None = None) -> None:
        payload = dict(data or {})
        self._note_ending(debate_id, type)
        if type == "delta" and len(self._outbox) >= self._buffer_limit:
            self._dropped_deltas += 1
            if self._dropped_deltas == 1:
                log.warning("redis outbox full: dropping live text until it drains")
            return
        key = payload.get("key")
        self._counter += 1
        self._outbox.append(
            _Outgoing(
                debate_id=debate_id,
                type=type,
                # default=str: a value JSON has no type for must not stop the debate.
                payload=json.dumps(payload, ensure_ascii=False, default=str),
                turn_key=key if isinstance(key, str) else "",
                counter=self._counter,
            )
        )
        self._written.clear()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name="redis-bus-writer"
            )

    def _note_ending(self, debate_id: str, type: str) -> None:
        if type == STATUS_EVENT:
            self._ended.pop(debate_id, None)
        elif type == TERMINAL_EVENT:
            self._ended[debate_id] = None
            self._ended.move_to_end(debate_id)
            while len(self._ended) > REMEMBERED_ENDINGS:
                self._ended.popitem(last=False)

    def reopen(self, debate_id: str) -> None:
        # The next event (a resume publishes one at once) makes the keys persistent again.
        self._ended.pop(debate_id, None)

    def has_ended(self, debate_id: str) -> bool:
        return debate_id in self._ended

    async def _write(self) -> None:
        outage = _Outage("publishing")
        while self._outbox:
            await self._sends.wait()
            self._sends.begin()
            batch = [self._outbox[i] for i in range(min(WRITE_BATCH, len(self._outbox)))]
            try:
                await self._send(batch)
            except UNREACHABLE as error:
                await outage.wait(error)
                continue
            except RedisError:
                # Not the connection: the same batch would fail again. Lose it, keep going.
                log.exception("redis refused %d event(s); they are dropped", len(batch))
            outage.over()
            for _ in batch:
                self._outbox.popleft()
            if self._dropped_deltas:
                log.warning("redis outbox drained; %d delta(s) were dropped", self._dropped_deltas)
                self._dropped_deltas = 0
        self._written.set()

    async def _send(self, batch: list[_Outgoing]) -> None:
        """One round trip for the whole batch: ``EVALSHA`` of the publishing script, which
        the server loads only when it does not know it (first use, or a restart). A
        pipeline of registered scripts would ask ``SCRIPT EXISTS`` first, a second round
        trip for every batch. A batch sent again after ``NOSCRIPT`` writes nothing twice:
        the script skips what this writer already wrote."""
        try:
            await self._send_once(batch)
        except NoScriptError:
            await self._redis.script_load(_PUBLISH)
            await self._send_once(batch)

    async def _send_once(self, batch: list[_Outgoing]) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            for item in batch:
                pipe.evalsha(
                    self._publish_sha,
                    3,
                    *self._keys(item.debate_id),
                    self._max_length,
                    item.type,
                    item.payload,
                    item.turn_key,
                    self._writer_id,
                    item.counter,
                    self._keep_ended,
                )
            await pipe.execute()

    async def flush(self) -> None:
        """Until everything published so far is written (bound it with ``asyncio.timeout``)."""
        await self._written.wait()

    async def _flushed_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._written.wait()
        return self._written.is_set()

    # -- reading ------------------------------------------------------------------------

    async def snapshot(self, debate_id: str) -> Snapshot:
        await self._flushed_within(OWN_WRITES_WAIT_SECONDS)
        stream, live_key, _ = self._keys(debate_id)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.xrevrange(stream, count=1)
                pipe.hgetall(live_key)
                last, starts = await pipe.execute()
            if not last:
                return Snapshot(last_id=None, live_turns=(), ended=False)
            last_id, fields = last[0]
            live: LiveState = {}
            if starts:
                oldest = min(starts.values(), key=_position)
                replay: Any = await self._redis.xrange(stream, oldest, last_id)
                for event in self._shared.of(debate_id, replay):
                    track_live(live, event)
        except UNREACHABLE as error:
            # The page then renders from the database alone and its stream starts over.
            log.warning("redis unreachable (snapshot of %s): %s", debate_id, error)
            return Snapshot(last_id=None, live_turns=(), ended=False)
        return Snapshot(
            last_id=last_id,
            live_turns=live_turns(live),
            ended=fields.get("type") == TERMINAL_EVENT,
        )

    async def subscribe(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[Event, None]:
        batches = self.subscribe_batches(debate_id, last_event_id=last_event_id)
        async with aclosing(batches):
            async for batch in batches:
                for event in batch:
                    yield event

    async def subscribe_batches(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[list[Event], None]:
        await self._flushed_within(OWN_WRITES_WAIT_SECONDS)
        stream = self.stream_key(debate_id)
        position, last_type = await self._start(debate_id, last_event_id)
        # Catch up page by page, each read only when the consumer asks for more.
        while True:
            page = await self._range(debate_id, stream, f"({position}", "+", REPLAY_PAGE)
            if page:
                position, last_type = page[-1].id, page[-1].type
            if len(page) < REPLAY_PAGE:
                break
            yield page
        if last_type == TERMINAL_EVENT:
            if page:
                yield page
            return
        # Caught up: join the live readers with no await since the last read, so whatever
        # the reader has not handed out yet comes through the queue.
        subscriber = Subscriber(queue=asyncio.Queue(maxsize=self._queue_size))
        reader = self._join(debate_id, subscriber, position)
        handed_out = reader.cursor
        try:
            if page:
                yield page
            # What the reader had already handed out when this subscriber joined: the end
            # among it, perhaps, which the queue will then never bring.
            while _position(handed_out) > _position(position):
                gap = await self._range(debate_id, stream, f"({position}", handed_out, REPLAY_PAGE)
                if not gap:
                    break
                ended = _through_end(gap)
                if ended is not None:
                    yield ended
                    return
                position = gap[-1].id
                yield gap
            while True:
                batch, finished = drain(subscriber.queue, await subscriber.queue.get())
                batch = _after(batch, position)
                # Live events stop at the end, as with the in-memory hub, even when a
                # resume's first events came in the same read.
                ended = _through_end(batch)
                if ended is not None:
                    yield ended
                    return
                if batch:
                    position = batch[-1].id
                    yield batch
                if finished:
                    return
        finally:
            if subscriber in reader.subscribers:
                reader.subscribers.remove(subscriber)

    async def _start(self, debate_id: str, last_event_id: str | None) -> tuple[str, str | None]:
        """Where a subscriber continues from, and the type of the entry there."""
        if not last_event_id or last_event_id == FROM_START:
            return FROM_START, None
        if stream_position(last_event_id) is None:
            raise UnknownEventId(last_event_id[:80])
        stream = self.stream_key(debate_id)
        found = await self._range(debate_id, stream, last_event_id, last_event_id, 1)
        if not found:
            raise UnknownEventId(last_event_id[:80])
        return last_event_id, found[0].type

    async def _range(
        self, debate_id: str, stream: str, low: str, high: str, count: int
    ) -> list[Event]:
        async def read() -> Any:
            return await self._redis.xrange(stream, low, high, count=count)

        return self._shared.of(debate_id, await self._retrying(f"reading {debate_id}", read))

    async def _retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        outage = _Outage(what)
        while True:
            try:
                result = await call()
            except UNREACHABLE as error:
                await outage.wait(error)
                continue
            outage.over()
            return result

    def _join(self, debate_id: str, subscriber: Subscriber, position: str) -> _Reader:
        reader = self._readers.get(debate_id)
        if reader is None:
            reader = self._readers[debate_id] = _Reader(cursor=position)
            self._wake_reading()
        reader.subscribers.append(subscriber)
        return reader

    def _wake_reading(self) -> None:
        """Have the read include every debate joined so far: start it, or end its wait."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.get_running_loop().create_task(
                self._read(), name="redis-bus-reader"
            )
        elif self._waking is None or self._waking.done():
            # One wake at a time: the read it ends is followed by one that includes every
            # debate joined until then.
            self._waking = asyncio.get_running_loop().create_task(
                self._wake(), name="redis-bus-wake"
            )

    async def _wake(self) -> None:
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.xadd(self._wake_key, {"w": "1"}, maxlen=WAKE_MAX_LENGTH, approximate=True)
                pipe.expire(self._wake_key, WAKE_KEEP_SECONDS)
                await pipe.execute()
        except UNREACHABLE:
            pass  # the read is failing too, and includes every debate when it retries

    async def _read(self) -> None:
        """Every watched debate's new events, in one ``XREAD`` after another, until none is
        watched. The read lists the debates it was sent with; its reply goes to those."""
        outage = _Outage("watching debates")
        try:
            while True:
                for debate_id in [d for d, r in self._readers.items() if not r.subscribers]:
                    del self._readers[debate_id]
                if not self._readers:
                    return
                self._reads.begin()
                try:
                    reply = await self._read_once(block=True)
                    if len(reply) == 1 and len(self._readers) > 1:
                        # A blocked XREAD is answered with the one stream whose write woke
                        # it; the rest of that write (other debates' events) is read at
                        # once, not a spacing later.
                        reply += await self._read_once(block=False)
                except UNREACHABLE as error:
                    await outage.wait(error)
                    continue
                outage.over()
                if reply:
                    await self._reads.wait()
        finally:
            self._reading = None
            for reader in self._readers.values():
                for subscriber in list(reader.subscribers):
                    offer(reader.subscribers, subscriber, None)
            self._readers.clear()

    async def _read_once(self, *, block: bool) -> list[Any]:
        """One ``XREAD`` of every watched debate's stream and the wake stream, its events
        handed out; the reply (empty when nothing came)."""
        asked = dict(self._readers)
        streams: dict[KeyT, StreamIdT] = {
            self.stream_key(d): reader.cursor for d, reader in asked.items()
        }
        streams[self._wake_key] = self._wake_cursor
        reply: Any = await self._redis.xread(
            streams, count=READ_COUNT, block=READ_BLOCK_MS if block else None
        )
        self._hand_out_read(asked, reply or [])
        return list(reply or [])

    def _hand_out_read(self, asked: dict[str, _Reader], reply: list[Any]) -> None:
        prefix = len(self._prefix)
        for key, entries in reply:
            if key == self._wake_key:
                self._wake_cursor = entries[-1][0]
                continue
            debate_id = key[prefix:]
            reader = asked.get(debate_id)
            if reader is not None and entries:
                self._hand_out(reader, self._shared.of(debate_id, entries))

    def _hand_out(self, reader: _Reader, events: list[Event]) -> None:
        reader.cursor = events[-1].id
        for event in events:
            for subscriber in list(reader.subscribers):
                offer(reader.subscribers, subscriber, event)
        if events[-1].type == TERMINAL_EVENT:
            for subscriber in list(reader.subscribers):
                offer(reader.subscribers, subscriber, None)
            reader.subscribers.clear()

    @property
    def reading(self) -> bool:
        """Whether this process reads any debate's stream (it does while one is watched)."""
        return self._reading is not None and not self._reading.done()

    def subscriber_count(self, debate_id: str) -> int:
        reader = self._readers.get(debate_id)
        return len(reader.subscribers) if reader else 0

    # -- closing ------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not await self._flushed_within(CLOSE_WAIT_SECONDS):
            log.warning("redis bus closed with %d event(s) unwritten", len(self._outbox))
        tasks = [task for task in (self._reading, self._waking, self._writer) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._redis.aclose()
