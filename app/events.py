"""Publish and subscribe per debate, with replay after a ``Last-Event-ID``.

The hub keeps, for each debate it has seen since this process started, the ordered log of
events published about it. A subscriber first gets the events after the id it already has,
then live ones, with no gap and no duplicate (it is registered before the replay is read,
and both happen without an ``await`` between them). Each subscriber has a bounded queue: one
that falls behind is dropped, never waited on; it reconnects with its last id and replays
from the log. Event ids carry the process's epoch, so an id from before a restart is
recognised as stale and the subscriber is told to reload instead of receiving a wrong replay;
so is any id this process did not issue for the debate (malformed, past the end of the log).

Events about a turn are published by the runner only after the turn is committed; deltas
(live text) are published as they arrive and are not stored in the database.

The hub is the default ``app.bus.EventBus``; the values here (``Event``, ``Snapshot``,
``LiveTurn``) and the rules for following live turns are shared with ``app.redis_bus``.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from app.event_types import (
    DeltaEvent,
    RetryingEvent,
    TurnCompletedEvent,
    TurnFailedEvent,
    TurnStartedData,
    TurnStartedEvent,
    typed,
)

TERMINAL_EVENT = "end"
# What a resumed run publishes first: the only event that may follow a terminal one.
STATUS_EVENT = "status"
HOUSEKEEPING_SECONDS = 1.0
# ``<epoch>-<seq>`` with ASCII digits only (``str.isdigit`` also takes "²" and "١٢٣") and
# few enough of them for any real log (``int`` refuses thousands of digits).
_EVENT_ID = re.compile(r"(?P<epoch>[0-9A-Za-z]{1,64})-(?P<seq>[0-9]{1,18})", re.ASCII)


@dataclass(frozen=True)
class Event:
    seq: int
    epoch: str
    debate_id: str
    type: str
    data: dict[str, Any]
    # Encodings of this event (JSON, an HTML fragment …), made once and shared by every
    # viewer instead of once per viewer.
    encodings: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.epoch}-{self.seq}"

    def encoded(self, kind: str, make: Callable[[Event], Any]) -> Any:
        if kind not in self.encodings:
            self.encodings[kind] = make(self)
        return self.encodings[kind]


@dataclass(frozen=True)
class LiveTurn:
    """A turn that has started and not yet completed, with the text streamed so far."""

    key: str
    info: TurnStartedData
    text: str


@dataclass(frozen=True)
class Snapshot:
    """What a page needs to render a running debate: the live turns and the last event id
    already reflected in them, from which its stream continues."""

    last_id: str | None
    live_turns: tuple[LiveTurn, ...]
    ended: bool


@dataclass
class Subscriber:
    queue: asyncio.Queue[Event | None]
    dropped: bool = False


# A turn's started-event data and the parts of its text streamed so far, by turn key.
LiveState = dict[str, tuple[TurnStartedData, list[str]]]


@dataclass
class _Channel:
    log: list[Event] = field(default_factory=list)
    subscribers: list[Subscriber] = field(default_factory=list)
    live: LiveState = field(default_factory=dict)
    ended_at: float | None = None


def track_live(live: LiveState, event: Event) -> None:
    """Follow the turns still streaming: a started turn is live until it completes or
    fails; a retry starts its text afresh."""
    if not isinstance(event.data.get("key"), str):
        return  # not about a turn (or an entry a bus could not read back whole)
    match typed(event.type, event.data):
        case TurnStartedEvent(data=info):
            live[info["key"]] = (info, [])
        case DeltaEvent(data=delta) if delta["key"] in live:
            live[delta["key"]][1].append(delta.get("text", ""))
        case RetryingEvent(data=retry) if retry["key"] in live:
            live[retry["key"]][1].clear()
        case TurnCompletedEvent(data=turn) | TurnFailedEvent(data=turn):
            live.pop(turn["key"], None)


def live_turns(live: LiveState) -> tuple[LiveTurn, ...]:
    return tuple(
        LiveTurn(key=key, info=info, text="".join(parts)) for key, (info, parts) in live.items()
    )


@dataclass(frozen=True)
class ParsedId:
    epoch: str
    seq: int


def parse_event_id(raw: str | None) -> ParsedId | None:
    """The parts of an id this hub could have issued; None for anything else."""
    match = _EVENT_ID.fullmatch(raw or "")
    if match is None:
        return None
    return ParsedId(epoch=match["epoch"], seq=int(match["seq"]))


def drain(queue: asyncio.Queue[Event | None], first: Event | None) -> tuple[list[Event], bool]:
    """The first item and all that is already waiting; True once the end marker is seen."""
    batch: list[Event] = []
    item = first
    while True:
        if item is None:
            return batch, True
        batch.append(item)
        if queue.empty():
            return batch, False
        item = queue.get_nowait()


def offer(subscribers: list[Subscriber], subscriber: Subscriber, item: Event | None) -> None:
    """Put ``item`` in the subscriber's queue; a full queue drops the subscriber instead."""
    try:
        subscriber.queue.put_nowait(item)
    except asyncio.QueueFull:
        # A viewer that cannot keep up must never slow the debate: drop it; it will
        # reconnect with its last id and replay from the log.
        subscriber.dropped = True
        subscribers.remove(subscriber)
        while not subscriber.queue.empty():
            subscriber.queue.get_nowait()
        subscriber.queue.put_nowait(None)


class UnknownEventId(Exception):
    """The client's last event id is not one this process issued for the debate (an earlier
    process's, or malformed, or past the end of the log): it must reload."""


class EventHub:
    def __init__(self, *, queue_size: int = 2000, keep_ended_seconds: float = 300.0) -> None:
        self.epoch = secrets.token_hex(3)
        self._queue_size = queue_size
        self._keep_ended = keep_ended_seconds
        self._channels: dict[str, _Channel] = {}
        self._next_housekeeping = 0.0

    # -- publishing ---------------------------------------------------------------------

    def publish(
        self, debate_id: str, type: str, data: Mapping[str, Any] | None = None
    ) -> Event | None:
        """The event as logged; None when the debate's run has ended and this is not the
        ``status`` that a resume begins with (a second ``end`` included)."""
        channel = self._channel(debate_id)
        if channel.ended_at is not None:
            if type != STATUS_EVENT:
                return None
            channel.ended_at = None
        payload = dict(data or {})
        event = Event(len(channel.log) + 1, self.epoch, debate_id, type, payload)
        channel.log.append(event)
        track_live(channel.live, event)
        if type == TERMINAL_EVENT:
            channel.ended_at = time.monotonic()
        for subscriber in list(channel.subscribers):
            self._offer(channel, subscriber, event)
        if type == TERMINAL_EVENT:
            for subscriber in list(channel.subscribers):
                self._offer(channel, subscriber, None)
        if time.monotonic() >= self._next_housekeeping:
            self._forget_old_channels()
        return event

    def _offer(self, channel: _Channel, subscriber: Subscriber, item: Event | None) -> None:
        offer(channel.subscribers, subscriber, item)

    # -- reading ------------------------------------------------------------------------

    async def snapshot(self, debate_id: str) -> Snapshot:
        channel = self._channels.get(debate_id)
        if channel is None:
            return Snapshot(last_id=None, live_turns=(), ended=False)
        last_id = channel.log[-1].id if channel.log else None
        return Snapshot(
            last_id=last_id,
            live_turns=live_turns(channel.live),
            ended=channel.ended_at is not None,
        )

    def reopen(self, debate_id: str) -> None:
        """A resumed debate goes on in the same log, so ids keep increasing."""
        channel = self._channels.get(debate_id)
        if channel is not None:
            channel.ended_at = None

    def has_ended(self, debate_id: str) -> bool:
        channel = self._channels.get(debate_id)
        return channel is not None and channel.ended_at is not None

    async def subscribe(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[Event, None]:
        """Events after ``last_event_id`` (all of this process's when None), then live ones,
        until the debate's terminal event. Raises ``UnknownEventId`` for an id this process
        did not issue for the debate."""
        batches = self.subscribe_batches(debate_id, last_event_id=last_event_id)
        async with aclosing(batches):
            async for batch in batches:
                for event in batch:
                    yield event

    async def subscribe_batches(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[list[Event], None]:
        """As ``subscribe``, but each wake-up yields everything pending at once, so a stream
        can send it in one write instead of one per event."""
        channel = self._channel(debate_id)
        after = self._events_seen(channel, last_event_id)
        subscriber = Subscriber(queue=asyncio.Queue(maxsize=self._queue_size))
        # No await between reading the backlog and registering: nothing can fall between.
        backlog = channel.log[after:]
        ended = channel.ended_at is not None
        if not ended:
            channel.subscribers.append(subscriber)
        try:
            if backlog:
                yield backlog
            if ended:
                return
            while True:
                batch, finished = drain(subscriber.queue, await subscriber.queue.get())
                if batch:
                    yield batch
                if finished:
                    return
        finally:
            if subscriber in channel.subscribers:
                channel.subscribers.remove(subscriber)

    def _events_seen(self, channel: _Channel, last_event_id: str | None) -> int:
        """How many of the channel's events a client whose last id is ``last_event_id`` has."""
        if not last_event_id:
            return 0
        parsed = parse_event_id(last_event_id)
        if parsed is None or parsed.epoch != self.epoch or parsed.seq > len(channel.log):
            raise UnknownEventId(last_event_id[:80])
        return parsed.seq

    def subscriber_count(self, debate_id: str) -> int:
        channel = self._channels.get(debate_id)
        return len(channel.subscribers) if channel else 0

    async def aclose(self) -> None:
        """Nothing to deliver or release: the log lives and dies with the process."""

    # -- housekeeping -------------------------------------------------------------------

    def _channel(self, debate_id: str) -> _Channel:
        channel = self._channels.get(debate_id)
        if channel is None:
            channel = self._channels[debate_id] = _Channel()
        return channel

    def _forget_old_channels(self) -> None:
        now = time.monotonic()
        # Scanning every channel on every publish would cost more as debates accumulate.
        self._next_housekeeping = now + HOUSEKEEPING_SECONDS
        stale = [
            debate_id
            for debate_id, channel in self._channels.items()
            if channel.ended_at is not None
            and now - channel.ended_at > self._keep_ended
            and not channel.subscribers
        ]
        for debate_id in stale:
            del self._channels[debate_id]
