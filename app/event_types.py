"""The events published about a debate, by type name, and the data each one carries.

The wire format is unchanged: an event is a type name and a JSON object (``Event.type`` and
``Event.data`` in ``app.events``, one SSE message, one Redis stream entry). What this module
adds is the types, so that mypy checks every producer against every consumer:

- ``Publisher.publish`` is overloaded per type name: the runner, the jobs and the queue
  publish through ``app.bus.EventBus``, so a payload with a missing, misspelled or
  mistyped field is an error where it is written;
- ``typed(type, data)`` gives a consumer a tagged union (``TypedEvent``): comparing its
  ``type`` with a name narrows its ``data`` to that type's ``TypedDict``, so reading a
  field the producer does not write is an error where it is read.

Both sides name the same ``TypedDict``s. ``typed`` trusts the producer: it checks the type
name, not the data (a bus carries only what ``publish`` let through). A ``DebateStatus`` in
an event read back from Redis is its plain string, equal to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, NotRequired, Protocol, TypedDict, cast, overload

from app.endings import EndedEarly
from app.status import DebateStatus

EventType = Literal[
    "status",
    "batch",
    "turn_started",
    "delta",
    "retrying",
    "turn_completed",
    "turn_failed",
    "usage",
    "end",
]


class StatusData(TypedDict):
    """The debate was queued (again) or began to run; a run says when the debate first ran,
    so a viewer's page shows it without reading the debate again."""

    status: DebateStatus
    started_at: NotRequired[str]  # ISO 8601, with "running"


class BatchData(TypedDict):
    """Turns about to run together (more than one), by key."""

    keys: list[str]
    size: int


class TurnStartedData(TypedDict):
    """A turn began: who speaks, where in the debate. A saved turn repeats these fields."""

    key: str
    role: str
    label: str
    provider: str
    model: str
    phase: str
    round: int


class DeltaData(TypedDict):
    """Text the turn streamed since its last delta."""

    key: str
    text: str


class RetryingData(TypedDict):
    """A retryable failure: the turn's text so far is void and it starts over after
    ``delay`` seconds."""

    key: str
    attempt: int
    delay: float
    error_kind: str
    error_status: int | None
    error_message: str


class TurnCompletedData(TurnStartedData):
    """The turn is saved (``turn_id``), with everything saved of it: its text (what its
    deltas brought, whole), usage, verdict and times (ISO 8601). A viewer's process needs
    no database read to show it."""

    turn_id: int
    text: str
    input_tokens: int
    output_tokens: int
    usage_estimated: bool
    latency_ms: int
    attempts: int
    started_at: str
    finished_at: str
    verdict: dict[str, Any] | None
    ended_early: EndedEarly | None


class TurnFailedData(TurnStartedData):
    """The turn is saved as failed, and the debate fails with it."""

    turn_id: int
    error_kind: str
    error_status: int | None
    error_message: str


class UsageData(TypedDict):
    """The debate's token totals after a saved turn."""

    input_tokens: int
    output_tokens: int


class _EndNotes(TypedDict, total=False):
    reason: str | None
    files_error: str | None


class EndData(_EndNotes):
    """The debate's run ended (the stream's last event): how, and why when not completed
    (``reason``), and a completed debate's report files that could not be written."""

    status: DebateStatus


class Publisher(Protocol):
    """What publishes a debate's events (``app.bus.EventBus``). ``publish`` queues an event
    for the debate's viewers and returns at once (callers use nothing it returns: only the
    in-memory hub knows the event's id at this point). The implementations take any type
    and mapping; callers that hold the protocol must pair a type with its data."""

    @overload
    def publish(self, debate_id: str, type: Literal["status"], data: StatusData) -> object: ...
    @overload
    def publish(self, debate_id: str, type: Literal["batch"], data: BatchData) -> object: ...
    @overload
    def publish(
        self, debate_id: str, type: Literal["turn_started"], data: TurnStartedData
    ) -> object: ...
    @overload
    def publish(self, debate_id: str, type: Literal["delta"], data: DeltaData) -> object: ...
    @overload
    def publish(self, debate_id: str, type: Literal["retrying"], data: RetryingData) -> object: ...
    @overload
    def publish(
        self, debate_id: str, type: Literal["turn_completed"], data: TurnCompletedData
    ) -> object: ...
    @overload
    def publish(
        self, debate_id: str, type: Literal["turn_failed"], data: TurnFailedData
    ) -> object: ...
    @overload
    def publish(self, debate_id: str, type: Literal["usage"], data: UsageData) -> object: ...
    @overload
    def publish(self, debate_id: str, type: Literal["end"], data: EndData) -> object: ...
    def publish(self, debate_id: str, type: str, data: Mapping[str, Any]) -> object: ...


class _AnyPublisher(Protocol):
    def publish(
        self, debate_id: str, type: str, data: Mapping[str, Any] | None = None
    ) -> object: ...


def relay(bus: Publisher, debate_id: str, type: str, data: Mapping[str, Any] | None) -> object:
    """Pass on an event to ``bus`` from a wrapper around it (``app.bus.Mirrored``,
    ``app.workers.FencedBus``): a wrapper is an implementation, with the implementations'
    untyped signature, and its callers' events were checked where they called it."""
    return cast(_AnyPublisher, bus).publish(debate_id, type, data)


# -- reading ------------------------------------------------------------------------------


class StatusEvent(NamedTuple):
    type: Literal["status"]
    data: StatusData


class BatchEvent(NamedTuple):
    type: Literal["batch"]
    data: BatchData


class TurnStartedEvent(NamedTuple):
    type: Literal["turn_started"]
    data: TurnStartedData


class DeltaEvent(NamedTuple):
    type: Literal["delta"]
    data: DeltaData


class RetryingEvent(NamedTuple):
    type: Literal["retrying"]
    data: RetryingData


class TurnCompletedEvent(NamedTuple):
    type: Literal["turn_completed"]
    data: TurnCompletedData


class TurnFailedEvent(NamedTuple):
    type: Literal["turn_failed"]
    data: TurnFailedData


class UsageEvent(NamedTuple):
    type: Literal["usage"]
    data: UsageData


class EndEvent(NamedTuple):
    type: Literal["end"]
    data: EndData


TypedEvent = (
    StatusEvent
    | BatchEvent
    | TurnStartedEvent
    | DeltaEvent
    | RetryingEvent
    | TurnCompletedEvent
    | TurnFailedEvent
    | UsageEvent
    | EndEvent
)

_BY_TYPE: dict[str, Callable[[Any, Any], TypedEvent]] = {
    "status": StatusEvent,
    "batch": BatchEvent,
    "turn_started": TurnStartedEvent,
    "delta": DeltaEvent,
    "retrying": RetryingEvent,
    "turn_completed": TurnCompletedEvent,
    "turn_failed": TurnFailedEvent,
    "usage": UsageEvent,
    "end": EndEvent,
}


def typed(type: str, data: Mapping[str, Any]) -> TypedEvent | None:
    """The event as its type's tagged value; None for a type name this code does not know
    (a newer producer's, sharing a bus)."""
    make = _BY_TYPE.get(type)
    return None if make is None else make(type, data)
