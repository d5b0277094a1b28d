"""The event bus: the one interface through which debates' events are published and watched.

Two implementations keep the same promises (tests/bus/ runs one contract against both):

- ``app.events.EventHub``, in this process's memory: the default. Its ids carry the
  process's epoch, so they mean nothing to another process or after a restart.
- ``app.redis_bus.RedisBus``, one Redis stream per debate, used when ``ARGUE_REDIS_URL`` is
  set: its ids are the stream's entry ids, so a viewer may reconnect to any process sharing
  the Redis server, before or after a restart, and continue exactly where it was.

The promises: ``publish`` never waits and never fails the debate (whatever happens to the
transport); a run's terminal event is its last (after it, only the ``status`` a resume
begins with is published: a second ``end`` is not, whichever process sends it); a subscriber
gets the events after its last id, then live ones, with no gap and no duplicate, until the
debate's terminal event; an id the bus cannot continue from
(malformed, foreign, past the end, or no longer kept) raises ``UnknownEventId`` so the viewer
reloads; a subscriber that falls behind never slows the publisher (it is paced or dropped,
and resumes from its last id); ``snapshot`` gives what a page needs to render a running
debate, whichever process runs it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, Protocol

from app.config import Settings
from app.event_types import Publisher, relay
from app.events import Event, EventHub, Snapshot


class EventBus(Publisher, Protocol):
    # ``publish``, typed per event type, comes from ``Publisher``.

    def reopen(self, debate_id: str) -> None:
        """A resumed debate goes on in the same log, after its terminal event."""
        ...

    def has_ended(self, debate_id: str) -> bool:
        """Whether this bus published the debate's terminal event since it last reopened."""
        ...

    async def snapshot(self, debate_id: str) -> Snapshot:
        """The live turns and the last event id they reflect."""
        ...

    def subscribe(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncIterator[Event]:
        """Events after ``last_event_id`` (all kept when None), then live ones, until the
        terminal event. Raises ``UnknownEventId`` for an id it cannot continue from."""
        ...

    def subscribe_batches(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[list[Event], None]:
        """As ``subscribe``, with everything pending at each wake-up in one list."""
        ...

    def subscriber_count(self, debate_id: str) -> int:
        """Subscribers of this process receiving the debate's live events."""
        ...

    async def aclose(self) -> None:
        """Deliver what is still queued (briefly), then let go of connections and tasks."""
        ...


def bus_from_settings(settings: Settings) -> EventBus:
    """Redis streams when ``ARGUE_REDIS_URL`` is set, otherwise this process's memory."""
    if settings.redis_url is None:
        return EventHub()
    return _redis_bus(settings)


def mirrored_from_settings(local: EventHub, settings: Settings) -> EventBus:
    """``local``, whose events also go to Redis when ``ARGUE_REDIS_URL`` is set: for a
    process that watches its own debate (the command line) while web servers sharing the
    Redis server show it too."""
    if settings.redis_url is None:
        return local
    return Mirrored(local=local, remote=_redis_bus(settings))


def _redis_bus(settings: Settings) -> EventBus:
    assert settings.redis_url is not None
    from app.redis_bus import RedisBus  # imported only when used: no Redis, no connection pool

    return RedisBus(
        settings.redis_url.get_secret_value(),
        key_prefix=settings.redis_key_prefix,
        max_length=settings.redis_stream_max_length,
        keep_ended_seconds=settings.redis_keep_ended_seconds,
    )


class Mirrored:
    """Publishes to both buses; everything read comes from ``local``, so what this process
    shows never depends on the remote one."""

    def __init__(self, *, local: EventHub, remote: EventBus) -> None:
        self.local = local
        self.remote = remote

    def publish(self, debate_id: str, type: str, data: Mapping[str, Any] | None = None) -> object:
        relay(self.remote, debate_id, type, data)
        return self.local.publish(debate_id, type, data)

    def reopen(self, debate_id: str) -> None:
        self.remote.reopen(debate_id)
        self.local.reopen(debate_id)

    def has_ended(self, debate_id: str) -> bool:
        return self.local.has_ended(debate_id)

    async def snapshot(self, debate_id: str) -> Snapshot:
        return await self.local.snapshot(debate_id)

    def subscribe(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncIterator[Event]:
        return self.local.subscribe(debate_id, last_event_id=last_event_id)

    def subscribe_batches(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[list[Event], None]:
        return self.local.subscribe_batches(debate_id, last_event_id=last_event_id)

    def subscriber_count(self, debate_id: str) -> int:
        return self.local.subscriber_count(debate_id)

    async def aclose(self) -> None:
        await self.remote.aclose()
        await self.local.aclose()
