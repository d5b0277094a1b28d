"""The live streams of a debate, as server-sent events.

Two views of the same hub events:

- ``GET /debates/{id}/stream`` — HTML fragments for the debate page (htmx SSE extension).
  Every message is named ``html`` and carries out-of-band swaps (``hx-swap-oob``): a started
  turn is appended to its group, text deltas are appended (escaped) to the turn's Markdown
  source (the page renders it as it grows), a completed turn replaces itself with its
  rendered Markdown. A started, completed or failed turn also brings the header's progress
  (the step being run, and an estimate of what is left). ``end`` carries the whole
  server-rendered final page body; ``reload`` asks the page to reload (its last event id
  is not one this process issued: an earlier process's, or malformed).
- ``GET /api/debates/{id}/events`` — the events themselves: ``event:`` is the type, ``data``
  its JSON, ``id`` its id.

Both resume after ``Last-Event-ID`` (header, or ``?last_event_id=``) with no gap and no
duplicate, and close when the debate has ended. An id that this process did not issue is
answered with ``reload``, not an error status: a browser's EventSource gives up for good on
one, and the page would silently stop updating instead of catching up. Sessions are opened
inside the generators, one short unit of work each; the hub subscription is closed in
``finally`` (a disconnect arrives as a cancellation).

Nothing heavy runs on the event loop: the database is read in threads, and rendering (the
final body, saved turns) or encoding a long replay runs in ``app.web.offload``'s pool, in
chunks of ``REPLAY_CHUNK_EVENTS`` events, so a few hundred viewers replaying a large debate
at once leave the loop free to answer everyone else.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Header, HTTPException, Query
from jinja2 import Environment
from markupsafe import Markup, escape
from sqlalchemy.engine import Engine
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool

from app import store
from app.bus import EventBus
from app.db import read_scope
from app.event_types import (
    DeltaData,
    EndData,
    RetryingData,
    StatusData,
    TurnCompletedData,
    TurnFailedData,
    TurnStartedData,
    UsageData,
    typed,
)
from app.events import TERMINAL_EVENT, Event, UnknownEventId
from app.status import DebateStatus
from app.web.deps import EngineDep, HubDep, TemplatesDep, TimelinesDep
from app.web.event_stream import LiveEventResponse
from app.web.offload import final_page_off_loop, off_loop
from app.web.timelines import Timelines, Watch
from app.web.view import (
    GroupView,
    TurnView,
    build_view,
    dom_id,
    downloads,
    group_id,
    group_title,
    shows_round_heading,
    turn_from_completed,
    turn_from_live,
)

router = APIRouter()

T = TypeVar("T")

PING_SECONDS = 15.0
# One write of a long replay holds this many events: between two, other tasks run.
REPLAY_CHUNK_EVENTS = 200
# Events whose encoding is cheap enough to make on the loop, a few at a time: a live batch
# (a window's deltas of every turn, several at once when they come from Redis) is sent at
# once instead of queueing in the pool behind rendered turns.
CHEAP_EVENTS = frozenset({"delta", "usage"})
CHEAP_ON_LOOP = 32


def chosen_last_id(header: str | None, query: str | None) -> str | None:
    """The browser's own reconnect sends the header, which then wins over the id the page
    was rendered with."""
    return header or query or None


def _debate_status(engine: Engine, debate_id: str) -> DebateStatus:
    with read_scope(engine) as session:
        return _found(store.debate_status(session, debate_id=debate_id), debate_id)


def _found(found: T | None, debate_id: str) -> T:
    if found is None:
        raise HTTPException(404, f"No debate {debate_id}.")
    return found


def _subscribe(
    hub: EventBus, debate_id: str, last_event_id: str | None
) -> AsyncGenerator[list[Event], None]:
    # Batches: everything pending goes out in one write. The hub's generator unsubscribes
    # as soon as it is closed.
    return hub.subscribe_batches(debate_id, last_event_id=last_event_id)


async def encoded_stream(
    batches: AsyncGenerator[list[Event], None], kind: str, encode: Callable[[Event], bytes]
) -> AsyncGenerator[bytes, None]:
    """Each batch of ``batches`` encoded as ``kind``; ``batches`` is closed with it. A live
    batch (a window's text, already encoded or a few cheap events) is joined right here, in
    one write; only the rest goes through ``encoded_chunks``. A live stream writes once a
    window to every viewer: a generator made for each of those batches was a measurable share
    of the web process."""
    async with aclosing(batches):
        async for batch in batches:
            if len(batch) <= REPLAY_CHUNK_EVENTS and _cheap_to_encode(batch, kind):
                if chunk := _join(batch, kind, encode):
                    yield chunk
                continue
            async for chunk in encoded_chunks(batch, kind, encode):
                yield chunk


async def encoded_chunks(
    batch: list[Event], kind: str, encode: Callable[[Event], bytes]
) -> AsyncIterator[bytes]:
    """``batch`` encoded as ``kind``, in chunks of at most ``REPLAY_CHUNK_EVENTS`` events.
    Encodings are made once per event and shared by every viewer; those still to make are
    made in the pool, unless they are a few cheap ones (live deltas), and the end, which
    carries the final page, in a thread of its own."""
    for start in range(0, len(batch), REPLAY_CHUNK_EVENTS):
        part = batch[start : start + REPLAY_CHUNK_EVENTS]
        if start:
            await asyncio.sleep(0)  # a long replay yields the loop between its writes
        if _cheap_to_encode(part, kind):
            chunk = _join(part, kind, encode)
        elif any(event.type == TERMINAL_EVENT for event in part):
            chunk = await final_page_off_loop(_join, part, kind, encode)
        else:
            chunk = await off_loop(_join, part, kind, encode)
        if chunk:
            yield chunk


def _cheap_to_encode(events: list[Event], kind: str) -> bool:
    """Every event already encoded as ``kind``, or the rest few and cheap."""
    missing = [event for event in events if kind not in event.encodings]
    return len(missing) <= CHEAP_ON_LOOP and all(event.type in CHEAP_EVENTS for event in missing)


def _join(events: list[Event], kind: str, encode: Callable[[Event], bytes]) -> bytes:
    return b"".join(event.encoded(kind, encode) for event in events)


async def _finished_elsewhere(hub: EventBus, status: DebateStatus, debate_id: str) -> bool:
    """Finished, and this process has no events about it (it ended before this process
    started, or long ago): there is nothing to replay, only the end to tell."""
    return DebateStatus(status).is_ended and (await hub.snapshot(debate_id)).last_id is None


# -- the page's stream ----------------------------------------------------------------------


@router.get(
    "/debates/{debate_id}/stream",
    summary="HTML fragments of a debate as it runs (for the page's htmx)",
    response_class=LiveEventResponse,
)
async def page_stream(
    debate_id: str,
    engine: EngineDep,
    hub: HubDep,
    templates: TemplatesDep,
    timelines: TimelinesDep,
    last_event_id: Annotated[str | None, Query()] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> LiveEventResponse:
    watch = _found(await run_in_threadpool(timelines.watch, debate_id), debate_id)
    fragments = Fragments(templates.env, engine, debate_id, timelines)
    after = chosen_last_id(last_event_id_header, last_event_id)
    return LiveEventResponse(
        page_events(hub, fragments, debate_id, watch=watch, last_event_id=after),
        ping=PING_SECONDS,
    )


async def page_events(
    hub: EventBus,
    fragments: Fragments,
    debate_id: str,
    *,
    watch: Watch,
    last_event_id: str | None,
) -> AsyncIterator[ServerSentEvent | bytes]:
    """The page's stream; it holds the viewer's ``watch`` for as long as it runs."""
    if await _finished_elsewhere(hub, watch.status, debate_id):
        # Encoded off the loop, in the final pages' thread: the whole debate, split into one
        # ``data:`` line per line.
        yield await final_page_off_loop(_encoded_end, fragments)
        return
    try:
        # Every viewer of a debate gets the same bytes for an event: render once.
        batches = _subscribe(hub, debate_id, last_event_id)
        async with aclosing(encoded_stream(batches, "page", fragments.encode)) as chunks:
            async for chunk in chunks:
                yield chunk
    except UnknownEventId:
        yield ServerSentEvent(data="stale", event="reload")


def _encoded_end(fragments: Fragments) -> bytes:
    return fragments.end_message().encode()


class Fragments:
    """Renders each hub event as the out-of-band swaps that bring the page up to date,
    from the debate's ``Timeline`` (shared by every viewer of the debate in this process)."""

    def __init__(
        self, env: Environment, engine: Engine, debate_id: str, timelines: Timelines
    ) -> None:
        self._env = env
        self._engine = engine
        self._debate_id = debate_id
        self._timelines = timelines

    def render(self, template: str, **context: Any) -> str:
        return self._env.get_template(template).render(**context)

    def encode(self, event: Event) -> bytes:
        message = self.for_event(event)
        return message.encode() if message is not None else b""

    def for_event(self, event: Event) -> ServerSentEvent | None:
        message = typed(event.type, event.data)
        if message is None or message.type == "batch":  # a batch shows as its turns start
            return None
        if message.type == "end":
            return self.end_message(event.id)
        if message.type == "status":
            html = self._on_status(message.data)
        elif message.type == "usage":
            html = self._on_usage(message.data)
        elif message.type == "turn_started":
            html = self._on_turn_started(message.data)
        elif message.type == "delta":
            html = self._on_delta(message.data)
        elif message.type == "retrying":
            html = self._on_retrying(message.data)
        elif message.type == "turn_completed":
            html = self._saved_turn(message.data, carried=turn_from_completed(message.data))
        else:
            html = self._saved_turn(message.data)
        return ServerSentEvent(data=html, event="html", id=event.id)

    def end_message(self, event_id: str | None = None) -> ServerSentEvent:
        """``end``, carrying the final body (with the hub event's id, when there is one)."""
        return ServerSentEvent(data=self.final_body(), event="end", id=event_id)

    def final_body(self) -> str:
        """The whole debate body from the database, swapped in for the live one."""
        with read_scope(self._engine) as session:
            debate = store.get_debate(session, debate_id=self._debate_id)
            if debate is None:
                return ""
            rows = store.turns_of(session, debate_id=self._debate_id)
            view = build_view(debate, store.debate_spec(debate), rows)
        return self.render("partials/debate_body.html", view=view, swap_oob=True)

    def _on_status(self, data: StatusData) -> str:
        timeline = self._timelines.note_status(
            self._debate_id, data["status"], started_at=data.get("started_at")
        )
        if timeline is None:
            return ""
        debate = timeline.debate
        has_turns = bool(timeline.turns)
        # The event's status, not the database's: a replayed event shows the page as it was
        # then, and later events bring it up to date in order.
        status = data["status"]
        return self.render("partials/status.html", status=status, oob=True) + self.render(
            "partials/controls.html",
            debate=debate,
            status=status,
            downloads=downloads(debate, has_turns=has_turns, status=status),
            oob=True,
        )

    def _on_usage(self, data: UsageData) -> str:
        return self.render(
            "partials/usage.html",
            input_tokens=data.get("input_tokens", 0),
            output_tokens=data.get("output_tokens", 0),
            oob=True,
        )

    def _on_turn_started(self, data: TurnStartedData) -> str:
        turn = turn_from_live(data)
        timeline = self._timelines.get(self._debate_id)
        fmt = timeline.debate.format if timeline is not None else "duel"
        heading = turn.round if shows_round_heading(fmt, turn.round, turn.phase) else None
        group = GroupView(
            id=group_id(turn.round, turn.phase),
            round=turn.round,
            phase=turn.phase,
            title=group_title(fmt, turn.round, turn.phase),
            round_heading=heading,
        )
        # Each piece is marked data-upsert (static/argue.js): a heading or group already on
        # the page is kept, a turn already there (an earlier failed attempt) is replaced.
        return (
            oob_append("#turns", self.render("partials/group.html", group=group))
            + oob_append(f"#{group.id}-turns", self.render("partials/turn.html", turn=turn))
            + self._progress(started=data)
        )

    def _on_delta(self, data: DeltaData) -> str:
        return oob_append(f"#x-{dom_id(data['key'])}", escape(data.get("text", "")))

    def _on_retrying(self, data: RetryingData) -> str:
        key = dom_id(data["key"])
        note = (
            f"Retrying (attempt {data['attempt']}) after {data['error_kind']}: "
            f"{data['error_message']}"
        )
        # The text starts over: the source, its rendering, and the badge back to "waiting".
        return (
            f'<div class="text live" id="x-{key}" hidden hx-swap-oob="true"></div>'
            f'<div class="text md" id="m-{key}" data-rendered hx-swap-oob="true"></div>'
            f'<span class="badge badge-waiting" id="b-{key}" hx-swap-oob="true">waiting</span>'
            f'<p class="note" id="n-{key}" hx-swap-oob="true">{escape(note)}</p>'
        )

    def _saved_turn(
        self, data: TurnCompletedData | TurnFailedData, *, carried: TurnView | None = None
    ) -> str:
        turn = self._timelines.saved_turn(self._debate_id, data["key"], carried=carried)
        if turn is None:
            return ""
        return self.render("partials/turn.html", turn=turn, oob=True) + self._progress()

    def _progress(self, started: TurnStartedData | None = None) -> str:
        """The header's progress after this event, from the saved turns (and ``started``,
        the turn that has just begun, which the database does not hold yet)."""
        timeline = self._timelines.get(self._debate_id)
        if timeline is None:
            return ""
        progress = timeline.progress(started)
        return self.render("partials/progress.html", progress=progress, live=True, oob=True)


def oob_append(selector: str, inner: str | Markup) -> str:
    """A wrapper whose children htmx appends to ``selector`` (the wrapper itself is dropped)."""
    return f'<div hx-swap-oob="beforeend:{escape(selector)}">{inner}</div>'


# -- the JSON stream --------------------------------------------------------------------------


@router.get(
    "/api/debates/{debate_id}/events",
    summary="A debate's events as server-sent events (JSON data)",
    description=(
        "Each event has an `id`, an `event` type (status, batch, turn_started, delta, retrying, "
        "turn_completed, turn_failed, usage, end) and JSON `data`. Reconnect with the "
        "`Last-Event-ID` header (or `?last_event_id=`) to continue without gap or duplicate. "
        "The stream closes after `end`; a debate that finished before this server started "
        "sends one `end` with its status. `reload` means the id cannot be continued from "
        "(malformed, past the end, or not kept: without ARGUE_REDIS_URL, ids are this server "
        "process's own): what follows starts over from the first event kept (fetch the "
        "debate for what came before)."
    ),
    response_class=LiveEventResponse,
    tags=["api"],
)
async def json_stream(
    debate_id: str,
    engine: EngineDep,
    hub: HubDep,
    last_event_id: Annotated[str | None, Query()] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> LiveEventResponse:
    status = await run_in_threadpool(_debate_status, engine, debate_id)
    after = chosen_last_id(last_event_id_header, last_event_id)
    return LiveEventResponse(
        json_events(hub, engine, debate_id, status=status, last_event_id=after),
        ping=PING_SECONDS,
    )


async def json_events(
    hub: EventBus,
    engine: Engine,
    debate_id: str,
    *,
    status: DebateStatus,
    last_event_id: str | None,
) -> AsyncIterator[ServerSentEvent | bytes]:
    if await _finished_elsewhere(hub, status, debate_id):
        reason = await run_in_threadpool(_status_reason, engine, debate_id)
        end: EndData = {"status": status, "reason": reason}
        yield ServerSentEvent(data=json.dumps(end), event="end")
        return
    try:
        batches = _subscribe(hub, debate_id, last_event_id)
        async with aclosing(encoded_stream(batches, "json", _encode_json)) as chunks:
            async for chunk in chunks:
                yield chunk
        return
    except UnknownEventId:
        yield ServerSentEvent(
            data=json.dumps({"reason": "the event id is not one this server can continue from"}),
            event="reload",
        )
    batches = _subscribe(hub, debate_id, None)
    async with aclosing(encoded_stream(batches, "json", _encode_json)) as chunks:
        async for chunk in chunks:
            yield chunk


def _status_reason(engine: Engine, debate_id: str) -> str | None:
    with read_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        return debate.status_reason if debate else None


def json_event(event: Event) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(event.data), event=event.type, id=event.id)


def _encode_json(event: Event) -> bytes:
    return json_event(event).encode()
